import { randomBytes } from 'node:crypto'
import { rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { toolSandbox } from '../dispatch.js'
import type { EgressPolicy } from '../egress/policy.js'
import { DescriptorGate, defaultReserve, fileLimit } from '../egress/descriptors.js'
import type { EgressProxy, EgressSettings } from '../egress/proxy.js'
import type { EgressSecret } from '../egress/secrets.js'
import type { Interception } from '../egress/tls.js'
import { shellEnv } from '../host/env.js'
import { BASH_ARGS, PersistentShell } from '../host/shell.js'
import { bashTool } from '../host/tools/bash.js'
import { DEFAULT_BASH_TIMEOUT_MS, DEFAULT_MAX_OUTPUT_CHARS, errorResult, type Sandbox, type SandboxOptions } from '../types.js'
import { toolServerBundle } from './bundle.js'
import { DiskQuota } from './disk.js'
import { LAUNCH_ENV, type LaunchContext, sandboxed, withForwarder } from './launch.js'
import { egressDirectory } from './egress-dirs.js'
import { EGRESS_CA_BUNDLE, EGRESS_SOCKET, INSIDE, insideEnv, prepareDirs, prepareMemoryDirs, prepareSkillsMountPoint, sandboxDirs } from './layout.js'
import { provision } from './provision.js'
import type { CgroupRoot } from './budget.js'
import { LimitGroup, type SandboxLimits } from './limits.js'
import { ToolClient } from './tool-client.js'

/** What every isolated sandbox of one server shares, fixed at start-up (backend.ts). */
export interface IsolatedRuntime {
  limits: SandboxLimits
  /** This server's cgroup branch; null: rlimits only. */
  cgroups: CgroupRoot | null
  /** Host uid the sandboxes run as; null: the server's own (a server not running as root). */
  hostUid: number | null
  /** The operator's egress settings; null: no network (socat missing), every sandbox loopback only. */
  egress: EgressSettings | null
  /**
   * The seccomp filter and the disk quota's looks, each on unless false: off only where their cost is measured (the
   * sandbox benchmark, test/bench/hardening.ts). Default both on.
   */
  guards?: { seccomp?: boolean; diskQuota?: boolean }
}

type ProxyOpener = (socket: string, policy: EgressPolicy, secrets?: readonly EgressSecret[]) => Promise<EgressProxy>

/** Per settings (one per backend), what opens a proxy: the judge is made once. */
const proxies = new WeakMap<EgressSettings, Promise<ProxyOpener>>()

/**
 * Opens an egress proxy; with `secrets`, one that puts them into requests to their hosts, reading HTTPS with the
 * server's CA (egress/tls.ts). Its modules (the vendor's sandbox runtime and what it loads) are loaded by the first
 * sandbox that needs a network, not by every server.
 */
function openProxy(settings: EgressSettings, socket: string, policy: EgressPolicy, secrets?: readonly EgressSecret[]): Promise<EgressProxy> {
  let opener = proxies.get(settings)
  if (!opener) {
    opener = import('../egress/proxy.js').then(({ AddressJudge, EgressProxy }) => {
      const judge = new AddressJudge(settings)
      const limits = { connections: settings.connections, gate: descriptorGate(settings) }
      return async (socket: string, policy: EgressPolicy, secrets?: readonly EgressSecret[]) => {
        const tls = secrets ? await interceptionOf(settings) : undefined
        return EgressProxy.open(socket, policy, judge, limits, secrets ?? [], tls && (() => tls))
      }
    })
    proxies.set(settings, opener)
  }
  return opener.then((open) => open(socket, policy, secrets))
}

/** The process's interception CA (egress/tls.ts), loaded with the proxy's modules by the first sandbox with secrets. */
async function interceptionOf(settings: EgressSettings): Promise<Interception> {
  const { interception } = await import('../egress/tls.js')
  return interception(settings.upstreamCaFile)
}

/** The process's descriptors as its proxies share them (descriptors.ts); no limit known: none is applied. */
function descriptorGate(settings: EgressSettings): DescriptorGate {
  const limit = fileLimit()?.soft ?? Number.MAX_SAFE_INTEGER
  return new DescriptorGate(limit, settings.descriptorReserve ?? defaultReserve(limit))
}

const TOOL_SERVER = 'tool-server.mjs'

/**
 * Built-in tools inside a bubblewrap sandbox (`TROUPE_SANDBOX=isolated`). `opts.workdir` is the session's own host
 * directory; the sandbox sees its `workspace/` as /workspace (the working directory), `uploads/` read-only as
 * /mnt/session/uploads, `skills/` read-only as /workspace/skills (when the session has skills), `memory/<slug>/` as
 * /mnt/memory/<slug> (each memory store, read-only as attached),
 * `outputs/` as /mnt/session/outputs and `tmp/` as /tmp (layout.ts). The persistent shell is
 * bash inside one sandbox; the file tools run in a node process inside a second one over the same directories, so
 * both see the same files and neither resolves a path on the host. Both share one set of limits (limits.ts).
 */
export function createIsolatedSandbox(opts: SandboxOptions, rt: IsolatedRuntime): Sandbox {
  const dirs = sandboxDirs(path.resolve(opts.workdir))
  prepareDirs(dirs, rt.hostUid, { seccomp: rt.guards?.seccomp !== false })
  if (opts.skills) prepareSkillsMountPoint(dirs)
  const memory = opts.memory ?? []
  if (memory.length) prepareMemoryDirs(dirs, memory, rt.hostUid)
  const limits = new LimitGroup(rt.limits, rt.cgroups, `sandbox-${randomBytes(6).toString('hex')}`)
  limits.create()
  // A node outside /usr (nvm, a tarball) is bound where it is, read-only.
  const extraReadOnly = process.execPath.startsWith('/usr/') ? [] : [process.execPath]
  const network = rt.egress && opts.network ? { settings: rt.egress, policy: opts.network } : null
  // The proxy's socket gets a short directory of its own (a socket path may not exceed 107 bytes; a data directory's
  // may), bound into the shell's sandbox only: the file tools have no network.
  const egressDir = network ? egressDirectory() : undefined
  // Secrets only with a way out: their variables hold placeholders the proxy replaces (egress/secrets.ts).
  const secrets = network && opts.secrets?.length ? { now: opts.secrets, names: new Set(opts.secrets.map((s) => s.name)) } : undefined
  const toolCtx: LaunchContext = { dirs, limits, hostUid: rt.hostUid, env: shellEnv(opts.env ?? insideEnv()), extraReadOnly, skills: opts.skills, memory }
  const variables = Object.fromEntries((secrets?.now ?? []).map((s) => [s.name, s.placeholder]))
  // Package installations run with the network and without the secrets (provision.ts).
  const installCtx: LaunchContext = { ...toolCtx, env: shellEnv(opts.env ?? insideEnv(network !== null)), egressDir }
  const ctx: LaunchContext = {
    ...installCtx,
    env: shellEnv({ ...(opts.env ?? insideEnv(network !== null, secrets !== undefined)), ...variables }),
    trustEgressCa: secrets !== undefined,
  }
  const egress =
    network && egressDir
      ? (async () => {
          // The bundle is in place before the shell can start (it waits for the proxy), the CA's key never is.
          if (secrets) writeFileSync(path.join(egressDir, EGRESS_CA_BUNDLE), (await interceptionOf(network.settings)).bundle, { mode: 0o644 })
          return openProxy(network.settings, path.join(egressDir, EGRESS_SOCKET), network.policy, secrets?.now)
        })()
      : undefined
  // Awaited before the shell first starts; a failure then is that command's error result.
  egress?.catch(() => undefined)
  const bash = ['/bin/bash', ...BASH_ARGS]
  const maxOutputChars = opts.maxOutputChars ?? DEFAULT_MAX_OUTPUT_CHARS
  const defaultTimeoutMs = opts.bashTimeoutMs ?? DEFAULT_BASH_TIMEOUT_MS
  const shell = new PersistentShell({
    cwd: dirs.root,
    env: LAUNCH_ENV,
    retainChars: Math.max(maxOutputChars * 4, 256 * 1024),
    program: sandboxed(ctx, network ? withForwarder(bash) : bash, { terminal: true }),
    scratch: { host: dirs.run, inside: INSIDE.run },
    killJobsOnInterrupt: true,
    // bwrap sets up namespaces and mounts before bash runs.
    startTimeoutMs: 20_000,
  })
  const tools = new ToolClient(
    () => sandboxed(toolCtx, [process.execPath, path.posix.join(INSIDE.run, TOOL_SERVER), String(maxOutputChars)], { addressSpaceLimit: false }),
    LAUNCH_ENV,
    dirs.root,
  )
  let bundleWritten: Promise<void> | undefined
  const writeBundle = () => (bundleWritten ??= toolServerBundle().then((text) => writeFileSync(path.join(dirs.run, TOOL_SERVER), text, { mode: 0o644 })))

  const quota = new DiskQuota(
    rt.guards?.diskQuota === false ? [] : [dirs.workspace, dirs.outputs, dirs.tmp, dirs.packages, ...(memory.length ? [dirs.memory] : [])],
    rt.limits.diskMib * 1024 * 1024,
    () => {
      // Something keeps writing past the quota: everything the sandbox runs ends (the PID namespace dies with bwrap).
      shell.terminate()
      tools.close()
    },
  )
  /** A sandbox with nothing running starts only while the host's budget for all sandboxes has room (budget.ts). */
  const admitted = () => {
    const full = limits.admit()
    return full ? errorResult(`${full}. The tool did not run; try again once other sessions' sandboxes have finished.`) : null
  }

  return toolSandbox({
    async bash(input, signal) {
      const refused = admitted()
      if (refused) return refused
      await egress
      quota.start()
      return quota.after(await bashTool(input, { workdir: INSIDE.workspace, maxOutputChars, signal, shell, defaultTimeoutMs }))
    },
    async file(name, input, signal) {
      const writes = name === 'write' || name === 'edit'
      const refused = admitted() ?? (writes ? await quota.refusal().then((why) => why && errorResult(why)) : null)
      if (refused) return refused
      await writeBundle()
      quota.start()
      const result = await tools.call(name, input, signal)
      return writes ? quota.after(result) : result
    },
    provision: (packages, signal) =>
      provision(
        {
          ctx: installCtx,
          marker: path.join(dirs.root, '.packages-installed'),
          policy: network?.policy ?? null,
          openProxy: (socket, policy) => openProxy(rt.egress!, socket, policy),
        },
        packages,
        signal,
      ),
    setNetwork(policy) {
      if (network) network.policy = policy
      void egress?.then(
        (proxy) => {
          proxy.policy = network!.policy
        },
        () => undefined,
      )
    },
    setSecrets(next) {
      if (!secrets) return
      // Only the variables the shell was started with exist inside; a secret of another name waits for a new sandbox.
      secrets.now = next.filter((s) => secrets.names.has(s.name))
      void egress?.then(
        (proxy) => {
          proxy.secrets = secrets.now
        },
        () => undefined,
      )
    },
    async close() {
      quota.stop()
      tools.close()
      await shell.close()
      await egress?.then((proxy) => proxy.close()).catch(() => undefined)
      if (egressDir) rmSync(egressDir, { recursive: true, force: true })
      // The kernel tears a PID namespace down asynchronously; the groups can go once their last task has.
      for (let i = 0; i < 20 && !limits.removed(); i++) await delay(50)
    },
  })
}
