import type { Mailbox } from '../../kit/index.js'
import type { EnvSecret, EnvSecretSource } from '../../vault/index.js'
import { type SandboxOwner, type SecretSource, type SessionSandbox, sandboxSpec, type Workdirs } from '../../workdir/index.js'
import { type EgressSecret, policyAllows } from '../../../sandbox/index.js'
import type { SessionEvents } from './events.js'
import type { History } from '../history/index.js'

/**
 * The session's sandbox, bound through the workdir port: the actor's mailbox is its owner (it stops what the sandbox
 * does once the actor may have lost the session), what it reports is told as a `session.error` the turn goes on
 * after, and its spec is read afresh from the history before each tool. A session with vaults has their
 * `environment_variable` credentials opened at each tool's `prepare` (a rotation applies from the next tool).
 */
export function bindSandbox(h: History, events: SessionEvents, mb: Mailbox, workdirs: Workdirs, envSecrets: EnvSecretSource): SessionSandbox {
  const owner: SandboxOwner = {
    get dead() {
      return mb.dead
    },
    alive: () => mb.alive(),
    checkServing: (then) => mb.checkServing(then),
    report: (message) => events.emit('session.error', { error: { type: 'unknown_error', message, retry_status: { type: 'retrying' } } }),
  }
  const spec = () => sandboxSpec({ env: h.rec.env, agent: h.session.agent, resources: h.session.resources, skills: h.rec.skills ?? [] })
  const { id, vault_ids } = h.session
  const told = new Set<string>()
  const secrets: SecretSource | undefined = vault_ids.length
    ? async () => {
        const found = await envSecrets.forSession(id, vault_ids)
        // A credential for hosts the sandbox may not reach is told once an activation (the client's
        // credential_host_unreachable_error): its secret goes nowhere there, which the user should hear of.
        const network = spec().network
        for (const s of network?.type === 'limited' ? found.secrets : []) {
          const far = (s.hosts ?? []).filter((host) => !policyAllows(network!, host.startsWith('*.') ? `any.${host.slice(2)}` : host))
          if (!far.length || told.has(s.credentialId)) continue
          told.add(s.credentialId)
          events.emit('session.error', {
            error: {
              type: 'credential_host_unreachable_error',
              credential_id: s.credentialId,
              vault_id: s.vaultId,
              message: `Credential ${s.credentialId} (${s.name}) names ${far.join(', ')}, which this session's limited networking does not let the sandbox reach.`,
              retry_status: { type: 'retrying' },
            },
          })
        }
        return { secrets: found.secrets.map(egressSecret), problems: found.problems }
      }
    : undefined
  return workdirs.bind(id, spec, owner, secrets)
}

/** A vault's credential as the sandbox's egress proxy takes it. */
function egressSecret(s: EnvSecret): EgressSecret {
  return {
    name: s.name,
    placeholder: s.placeholder,
    value: s.value,
    header: s.header,
    body: s.body,
    hosts: s.hosts ? { type: 'limited', hosts: s.hosts } : { type: 'unrestricted' },
  }
}
