import { counted, trackSandboxMemory } from './metrics.js'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { isIP } from 'node:net'
import path from 'node:path'
import { createHostSandbox } from './host/sandbox.js'
import { defaultReserve, fileLimit } from './egress/descriptors.js'
import type { EgressSettings } from './egress/proxy.js'
import { readUpstreamCa } from './egress/upstream-ca.js'
import { sweepEgressDirs } from './isolated/egress-dirs.js'
import { LAUNCH_ENV, SOCAT, sandboxed } from './isolated/launch.js'
import { insideEnv, prepareDirs, sandboxDirs } from './isolated/layout.js'
import { ADMISSION, defaultBudget, openCgroupRoot, type SandboxesBudget } from './isolated/budget.js'
import { DEFAULT_LIMITS, LimitGroup, type SandboxLimits } from './isolated/limits.js'
import { createIsolatedSandbox, type IsolatedRuntime } from './isolated/sandbox.js'
import { seccompFilter } from './isolated/seccomp.js'
import type { Sandbox, SandboxOptions } from './types.js'

export type SandboxKind = 'isolated' | 'local'

/** The backend this server runs tools with, chosen once at start-up. */
export interface SandboxBackend {
  kind: SandboxKind
  /** Why this one, for the start-up message. */
  why: string
  /** Sandboxes reach the network only through an egress proxy that applies `SandboxOptions.network`. */
  enforcesNetwork: boolean
  /**
   * The host uid sandboxes write files as, when not the server's own (a root server's `TROUPE_SANDBOX_UID`): what the
   * server writes where a sandbox must be able to change it (a `read_write` memory mount) is handed to it.
   */
  writerUid?: number | null
  create(opts: SandboxOptions): Sandbox
}

/** `TROUPE_SANDBOX` and the isolated backend's limits, as read from the environment. */
export interface SandboxSetting {
  /** `TROUPE_SANDBOX`: `isolated` or `local`; default (unset): isolated where it can start, else local. */
  kind?: SandboxKind
  limits: SandboxLimits
  /** What all the sandboxes of this server may use together (`TROUPE_SANDBOXES_MEMORY_MIB`, `TROUPE_SANDBOXES_PIDS`). */
  budget: SandboxesBudget
  /** `TROUPE_SANDBOX_UID`: the host uid sandboxes run as when the server runs as root; default 65534 (nobody). */
  hostUid: number
  egress: EgressSettings
}

export const DEFAULT_SANDBOX_UID = 65534

/** Connections one sandbox may have open through its egress proxy at once (`TROUPE_SANDBOX_CONNECTIONS`). */
export const DEFAULT_CONNECTIONS = 256

export const localBackend: SandboxBackend = {
  kind: 'local',
  enforcesNetwork: false,
  why: 'TROUPE_SANDBOX=local: tools run on the host as the server’s own user, no isolation',
  create: createHostSandbox,
}

/**
 * Opens the backend `setting` asks for. Unset: isolated when a probe sandbox starts and exits cleanly here, else
 * local with the reason. `isolated` asked for and failing its probe throws, naming what failed.
 */
export function openSandboxBackend(setting: SandboxSetting): SandboxBackend {
  return counted(openBackend(setting))
}

function openBackend(setting: SandboxSetting): SandboxBackend {
  if (setting.kind === 'local') return localBackend
  const rt: IsolatedRuntime = {
    limits: setting.limits,
    cgroups: openCgroupRoot(setting.budget),
    hostUid: process.geteuid?.() === 0 ? setting.hostUid : null,
    egress: null,
  }
  const failure = probe(rt)
  if (failure) {
    if (setting.kind === 'isolated') throw new Error(`TROUPE_SANDBOX=isolated cannot start here: ${failure}`)
    return {
      ...localBackend,
      why: `isolated sandbox unavailable (${failure}); tools run on the host as the server’s own user, no isolation (set TROUPE_SANDBOX=local to choose this knowingly)`,
    }
  }
  const limits = new LimitGroup(rt.limits, rt.cgroups, 'probe').describe()
  const syscalls = seccompFilter()
    ? `seccomp filter (io_uring, keyrings, bpf, perf events, modules, kexec, mount and namespace calls, userfaultfd and more refused; no TIOCSTI)`
    : `no seccomp filter on ${process.arch}`
  const uid = rt.hostUid === null ? 'the server’s uid' : `host uid ${rt.hostUid}`
  let network: string
  if (existsSync(SOCAT)) {
    sweepEgressDirs()
    rt.egress = setting.egress
    const allowed = setting.egress.allowAddresses.length
      ? ` (the host's addresses ${setting.egress.allowAddresses.join(', ')} allowed by TROUPE_SANDBOX_EGRESS_ALLOW)`
      : ''
    const limit = fileLimit()?.soft
    const reserve = setting.egress.descriptorReserve ?? (limit ? defaultReserve(limit) : undefined)
    const kept = limit && reserve ? `, the server keeping ${reserve} of its ${limit} file descriptors (TROUPE_FD_RESERVE)` : ''
    const caFile = setting.egress.upstreamCaFile
    const upstream = caFile
      ? `; vault secrets' HTTPS hosts checked against node's roots and the ${readUpstreamCa(caFile).length} of ${caFile} (TROUPE_SANDBOX_EGRESS_CA_FILE)`
      : ''
    network = `network only through an egress proxy per session, never to this host’s own services${allowed}, at most ${setting.egress.connections} connections each (TROUPE_SANDBOX_CONNECTIONS)${kept}${upstream}`
  } else {
    network = `loopback-only network: ${SOCAT} (Debian’s socat) is missing, so no egress proxy; limited environments are refused`
  }
  const cgroups = rt.cgroups
  if (cgroups) trackSandboxMemory(() => cgroups.usedBytes())
  return {
    kind: 'isolated',
    enforcesNetwork: rt.egress !== null,
    writerUid: rt.hostUid,
    why: `${setting.kind ? 'TROUPE_SANDBOX=isolated' : 'bubblewrap starts here'}: one bubblewrap sandbox per session, ${uid}, ${network}; ${limits}; ${syscalls}`,
    create: (opts) => createIsolatedSandbox(opts, rt),
  }
}

/** Starts `/bin/true` in a throw-away sandbox exactly as sessions' sandboxes start; the reason it failed, or null. */
function probe(rt: IsolatedRuntime): string | null {
  const root = mkdtempSync(path.join(tmpdir(), 'troupe-sandbox-probe-'))
  const limits = new LimitGroup(rt.limits, rt.cgroups, `probe-${process.pid}`)
  try {
    const dirs = sandboxDirs(root)
    prepareDirs(dirs, rt.hostUid)
    limits.create()
    const { file, args } = sandboxed({ dirs, limits, hostUid: rt.hostUid, env: insideEnv() }, ['/bin/true'])
    const r = spawnSync(file, args, { cwd: root, env: LAUNCH_ENV, encoding: 'utf8', timeout: 10_000 })
    if (r.error) return r.error.message
    if (r.status === 0) return null
    const said = r.stderr.trim().split('\n').at(-1) ?? ''
    if (/bwrap: (not found|No such file)/.test(said)) return 'bubblewrap (bwrap) is not installed'
    return said || `the probe sandbox exited with ${r.status ?? r.signal}`
  } catch (err) {
    return (err as Error).message
  } finally {
    limits.removed()
    rmSync(root, { recursive: true, force: true })
  }
}

/** Reads TROUPE_SANDBOX and the limit settings; throws on a value that is not one of them. */
export function readSandboxSetting(env: NodeJS.ProcessEnv): SandboxSetting {
  const raw = env.TROUPE_SANDBOX?.trim() ?? ''
  if (raw !== '' && raw !== 'isolated' && raw !== 'local') throw new Error(`TROUPE_SANDBOX must be isolated or local (was ${JSON.stringify(raw)})`)
  const int = (name: string, byDefault: number, min: number): number => {
    const v = env[name]?.trim() ?? ''
    if (v === '') return byDefault
    const n = Number(v)
    if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer of at least ${min} (was ${JSON.stringify(v)})`)
    return n
  }
  const byDefault = defaultBudget()
  return {
    kind: raw === '' ? undefined : raw,
    limits: {
      memoryMib: int('TROUPE_SANDBOX_MEMORY_MIB', DEFAULT_LIMITS.memoryMib, 64),
      pids: int('TROUPE_SANDBOX_PIDS', DEFAULT_LIMITS.pids, 16),
      cpuSeconds: int('TROUPE_SANDBOX_CPU_SECONDS', DEFAULT_LIMITS.cpuSeconds, 1),
      files: int('TROUPE_SANDBOX_FILES', DEFAULT_LIMITS.files, 64),
      diskMib: int('TROUPE_SANDBOX_DISK_MIB', DEFAULT_LIMITS.diskMib, 16),
    },
    budget: {
      // At least twice what admitting one sandbox takes (budget.ts ADMISSION): else none would ever start.
      memoryMib: int('TROUPE_SANDBOXES_MEMORY_MIB', byDefault.memoryMib, 2 * ADMISSION.memoryMib),
      pids: int('TROUPE_SANDBOXES_PIDS', byDefault.pids, 2 * ADMISSION.pids),
    },
    hostUid: int('TROUPE_SANDBOX_UID', DEFAULT_SANDBOX_UID, 1),
    egress: {
      allowAddresses: readAllowAddresses(env.TROUPE_SANDBOX_EGRESS_ALLOW),
      connections: int('TROUPE_SANDBOX_CONNECTIONS', DEFAULT_CONNECTIONS, 1),
      descriptorReserve: env.TROUPE_FD_RESERVE?.trim() ? int('TROUPE_FD_RESERVE', 0, 64) : undefined,
      upstreamCaFile: env.TROUPE_SANDBOX_EGRESS_CA_FILE?.trim() || undefined,
    },
  }
}

/** `TROUPE_SANDBOX_EGRESS_ALLOW`: comma-separated addresses or CIDR ranges, each optionally with `:port`. */
function readAllowAddresses(raw: string | undefined): string[] {
  const entries = (raw ?? '')
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '')
  for (const e of entries) {
    const bare = e.startsWith('[') ? e.slice(1, e.indexOf(']')) : e.includes('.') ? e.split(':')[0]! : e
    const [address, prefix] = bare.split('/')
    if (isIP(address ?? '') === 0 || (prefix !== undefined && !/^\d{1,3}$/.test(prefix))) {
      throw new Error(`TROUPE_SANDBOX_EGRESS_ALLOW: ${JSON.stringify(e)} is not an address or CIDR range (with an optional :port)`)
    }
  }
  return entries
}
