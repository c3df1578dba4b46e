import { existsSync } from 'node:fs'
import { shellQuote } from '../host/shell.js'
import {
  bwrapArgs,
  EGRESS_CA_BUNDLE,
  EGRESS_SOCKET,
  INSIDE,
  type MemoryBind,
  PROXY_PORT,
  type SandboxDirs,
  type SessionMount,
  sessionMounts,
} from './layout.js'
import type { LimitGroup } from './limits.js'

/** A program to spawn: the file and its arguments. */
export interface Program {
  file: string
  args: string[]
}

export interface LaunchContext {
  dirs: SandboxDirs
  limits: LimitGroup
  /** The host uid (and gid) the sandbox runs as; null: this process's own (a server not running as root). */
  hostUid: number | null
  /** The whole environment inside (bwrap clears whatever the spawner's environment held). */
  env: Record<string, string>
  /** Host files bound read-only at the same path (e.g. a node binary outside /usr). */
  extraReadOnly?: readonly string[]
  /** The egress proxy's socket directory, bound read-only at /run/egress; none: loopback only (layout.ts). */
  egressDir?: string
  /** The egress directory holds `EGRESS_CA_BUNDLE`, bound over the system's bundle too (a sandbox with secrets). */
  trustEgressCa?: boolean
  /** The session's skills are bound read-only at /workspace/skills (layout.ts). */
  skills?: boolean
  /** The session's memory stores, each bound at /mnt/memory/<slug> (layout.ts). */
  memory?: readonly MemoryBind[]
}

/** The environment of the launching shell, setpriv and bwrap: only what finds them. */
export const LAUNCH_ENV = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' }

/** Where a root server stages the session's directories for bwrap, in a mount namespace of the sandbox's own. */
const STAGE = '/mnt'

/** The descriptor bwrap reads the seccomp filter from (`--seccomp`): opened by the launching shell, from the file. */
const SECCOMP_FD = 9

export interface LaunchOptions {
  /** RLIMIT_AS as well (limits.ts); off for node, the tool server. Default true. */
  addressSpaceLimit?: boolean
  /**
   * `command` keeps the terminal it was started on (the persistent shell, on its pty): no `--new-session`. Whatever
   * runs there can still not type into that terminal, the seccomp filter refuses TIOCSTI (seccomp.ts). Default false:
   * a new session, no controlling terminal at all.
   */
  terminal?: boolean
}

/**
 * How to start `command` inside a session's sandbox. A tiny /bin/sh, still this process's user, joins the sandbox's
 * cgroups (so everything the sandbox forks is counted from the first instruction) and becomes bwrap (exec all the
 * way, so the pid spawned is bwrap's: killing it, or this server dying, `--die-with-parent`, ends the whole PID
 * namespace); bwrap then runs `command` under prlimit (`addressSpaceLimit: false` leaves RLIMIT_AS off, limits.ts)
 * and the seccomp filter (seccomp.ts, from `dirs.seccomp`). bwrap starts with an empty environment (`env -i`), so the
 * sandbox's pid 1 holds no host path (a shell exports its working directory as PWD).
 *
 * A root server first drops to `hostUid` with no supplementary groups. That uid may have no search permission on the
 * data directory (a 0700 directory is common), so before dropping, the shell enters a private mount namespace,
 * mounts a small tmpfs on /mnt there and bind-mounts the session's directories onto it; bwrap binds them from there.
 * The host's /mnt is untouched, and the staging namespace dies with the sandbox.
 */
export function sandboxed(ctx: LaunchContext, command: readonly string[], { addressSpaceLimit = true, terminal = false }: LaunchOptions = {}): Program {
  const inner = ['/usr/bin/prlimit', ...ctx.limits.prlimitArgs(addressSpaceLimit), ...command]
  const mounts = sessionMounts(ctx.dirs, { egressDir: ctx.egressDir, skills: ctx.skills, memory: ctx.memory })
  const joins = ctx.limits.procsFiles.map((f) => `echo $$ > ${shellQuote(f)}`)
  const filter = existsSync(ctx.dirs.seccomp) ? ctx.dirs.seccomp : undefined
  const extra = [...(filter ? ['--seccomp', String(SECCOMP_FD)] : []), ...(terminal ? [] : ['--new-session'])]
  const bwrap = `env -i bwrap "$@"${filter ? ` ${SECCOMP_FD}< ${shellQuote(filter)}` : ''}`
  // The bundle is bound from the egress directory as bwrap sees it (staged, for a root server).
  const caBundle = (m: readonly SessionMount[]) => {
    const egress = ctx.trustEgressCa ? m.find((x) => x.dest === INSIDE.egress) : undefined
    return egress && `${egress.source}/${EGRESS_CA_BUNDLE}`
  }
  const args = (m: readonly SessionMount[]) => [...extra, ...bwrapArgs(m, ctx.env, ctx.extraReadOnly, caBundle(m)), '--', ...inner]
  if (ctx.hostUid === null) {
    const script = [...joins, `exec ${bwrap}`].join(' && ')
    return { file: '/bin/sh', args: ['-c', script, 'troupe-sandbox', ...args(mounts)] }
  }
  const staged = mounts.map((m, i) => ({ ...m, source: `${STAGE}/${i}` }))
  const stage = [
    `mount -t tmpfs -o mode=0755,size=64k troupe-stage ${STAGE}`,
    `mkdir ${staged.map((m) => m.source).join(' ')}`,
    ...mounts.map((m, i) => `mount --bind ${shellQuote(m.source)} ${staged[i]!.source}`),
    `exec setpriv --reuid=${ctx.hostUid} --regid=${ctx.hostUid} --clear-groups -- ${bwrap}`,
  ].join(' && ')
  const script = [...joins, 'exec unshare --mount --propagation private -- /bin/sh -c "$0" troupe-sandbox "$@"'].join(' && ')
  return { file: '/bin/sh', args: ['-c', script, stage, ...args(staged)] }
}

/** Debian's socat: the forwarder from the sandbox's loopback to its egress proxy's socket. */
export const SOCAT = '/usr/bin/socat'

/**
 * `command` preceded by the forwarder that is the sandbox's only way out: socat listens on 127.0.0.1:3128 inside
 * (the network namespace has nothing else) and carries each connection to the egress proxy's Unix socket, outside.
 * `command` starts once socat listens (its socket in the namespace's /proc/net/tcp; at most 3 s), so a first command
 * never finds the way out missing. socat runs in the process group of the sandbox's own processes, which an
 * interrupt's job kill spares (shell.ts); the agent may kill it (same uid) and then has no network, nothing more.
 */
export function withForwarder(command: readonly string[]): string[] {
  const socket = `${INSIDE.egress}/${EGRESS_SOCKET}`
  const forward = `${SOCAT} TCP-LISTEN:${PROXY_PORT},bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:${socket} </dev/null >/dev/null 2>&1 &`
  // 127.0.0.1:PORT in /proc/net/tcp's notation, in state 0A (listening).
  const listening = ` 0100007F:${PROXY_PORT.toString(16).toUpperCase().padStart(4, '0')} 00000000:0000 0A `
  const wait = `i=0; until grep -q '${listening}' /proc/net/tcp || [ $i -ge 300 ]; do i=$((i+1)); sleep 0.01; done;`
  return ['/bin/sh', '-c', `${forward} ${wait} exec "$@"`, 'troupe-sandbox', ...command]
}
