import type { NatsConnection } from '@nats-io/transport-node'
import type { SandboxHostBeat } from '../../protocol/subjects.js'
import type { Roster } from '../kit/index.js'
import type { WorkdirDeps } from './deps.js'
import { InProcessSandbox } from './in-process.js'
import type { EgressSecret } from '../../sandbox/index.js'
import type { SandboxOwner, SandboxSpec, SecretSource, SessionSandbox } from './port.js'
import { RemoteSandbox } from './remote-sandbox.js'

/** Where a session host's sessions run their tools when not here (`TROUPE_SANDBOX_PLACEMENT=remote`). */
export interface SandboxHosts {
  /** The sandbox hosts heard (their heartbeats). */
  roster: Roster<SandboxHostBeat>
  nc: NatsConnection
  /** The placement revision the session's actor was made under: every call to a sandbox host carries it. */
  fence(session: string): number
}

/**
 * The host directories and sandboxes of the sessions a host serves: what the session kind holds of this folder. A
 * session's is bound on this host, or on a sandbox host when `remote` is given.
 *
 * @example
 * const workdirs = new Workdirs(await workdirDeps({ js, kvm, storage, client, log, dataDir, backend }))
 * const sandbox = workdirs.bind(sessionId, () => sandboxSpec({ env, agent, resources, skills }), owner)
 * if ((await sandbox.prepare(signal)).kind === 'ready') await sandbox.runTool('bash', { command: 'ls' }, signal)
 */
export class Workdirs {
  constructor(
    private readonly deps: WorkdirDeps,
    private readonly remote?: SandboxHosts,
  ) {}

  /**
   * The session's sandbox for the actor `owner` (made lazily, at its first `prepare`); `spec` and `secrets` (its vaults'
   * environment variables, when it has vaults) are asked at each.
   */
  bind(session: string, spec: () => SandboxSpec, owner: SandboxOwner, secrets?: SecretSource): SessionSandbox {
    const { remote, deps } = this
    const withSecrets = secrets && secretsOnce(secrets, owner)
    if (!remote) return new InProcessSandbox(session, spec, owner, deps, withSecrets)
    return new RemoteSandbox({
      session,
      fence: remote.fence(session),
      spec,
      ...(withSecrets ? { secrets: withSecrets } : {}),
      report: (message) => owner.report(message),
      serves: () => {
        if (owner.dead) return false
        try {
          owner.checkServing()
          return true
        } catch {
          return false
        }
      },
      roster: remote.roster,
      nc: remote.nc,
      workspaces: deps.workspaces,
      shellIdleMs: deps.settings.shellIdleMs,
      log: deps.log,
    })
  }

  /** What is kept of the session's published outputs goes (session delete). */
  forget(session: string): Promise<void> {
    return this.deps.outputs.forget(session)
  }
}

/** The secrets of `source`, each problem it finds told to the client once in this activation. */
function secretsOnce(source: SecretSource, owner: SandboxOwner): () => Promise<EgressSecret[]> {
  const told = new Set<string>()
  return async () => {
    const { secrets, problems } = await source()
    for (const p of problems) {
      if (told.has(p)) continue
      told.add(p)
      owner.report(p)
    }
    return secrets
  }
}
