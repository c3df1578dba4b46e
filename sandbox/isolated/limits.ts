import { existsSync, mkdirSync, readdirSync, rmdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { serverRuns } from './servers.js'

/** What one session's sandbox may use. */
export interface SandboxLimits {
  /** Memory of everything in the sandbox together, in MiB. `TROUPE_SANDBOX_MEMORY_MIB`, default 2048. */
  memoryMib: number
  /** Processes (and threads) alive at once. `TROUPE_SANDBOX_PIDS`, default 256. */
  pids: number
  /** CPU seconds each process may use (RLIMIT_CPU; SIGKILL past it). `TROUPE_SANDBOX_CPU_SECONDS`, default 3600. */
  cpuSeconds: number
}

export const DEFAULT_LIMITS: SandboxLimits = { memoryMib: 2048, pids: 256, cpuSeconds: 3600 }

const CGROUP_V1 = '/sys/fs/cgroup'

/**
 * The limits one sandbox runs under. Memory and process count go to cgroup v1 `memory` and `pids` hierarchies when
 * this process may create groups there (they count the whole sandbox together); elsewhere they fall back to
 * per-process rlimits: RLIMIT_AS for memory (per process) and RLIMIT_NPROC (counted per host uid, so shared by
 * every sandbox running under the same uid). CPU time is always RLIMIT_CPU, per process.
 */
export class LimitGroup {
  /** `cgroup.procs` files a process joins before it becomes the sandbox; empty when rlimits do the work. */
  readonly procsFiles: string[]
  private readonly dirs: string[]

  constructor(
    readonly limits: SandboxLimits,
    readonly cgroups: CgroupRoot | null,
    name: string,
  ) {
    this.dirs = cgroups ? [path.join(cgroups.memory, name), path.join(cgroups.pids, name)] : []
    this.procsFiles = this.dirs.map((d) => path.join(d, 'cgroup.procs'))
  }

  /** Creates the groups and writes their limits. */
  create(): void {
    if (!this.cgroups) return
    const [memory, pids] = this.dirs as [string, string]
    mkdirSync(memory, { recursive: true })
    mkdirSync(pids, { recursive: true })
    writeFileSync(path.join(memory, 'memory.limit_in_bytes'), String(this.limits.memoryMib * 1024 * 1024))
    // Swap would let a memory hog outlive its limit slowly instead of being killed.
    if (existsSync(path.join(memory, 'memory.memsw.limit_in_bytes'))) {
      writeFileSync(path.join(memory, 'memory.memsw.limit_in_bytes'), String(this.limits.memoryMib * 1024 * 1024))
    }
    writeFileSync(path.join(pids, 'pids.max'), String(this.limits.pids))
  }

  /**
   * `prlimit` options for the process that runs inside: CPU time always, memory and processes without cgroups. The
   * address-space limit is left off for node (`addressSpace: false`, the tool server): V8 reserves more address space
   * than it uses and will not start under a few hundred MiB of it.
   */
  prlimitArgs(addressSpace = true): string[] {
    const args = [`--cpu=${this.limits.cpuSeconds}`, '--core=0']
    if (this.cgroups) return args
    if (addressSpace) args.push(`--as=${this.limits.memoryMib * 1024 * 1024}`)
    args.push(`--nproc=${this.limits.pids}`)
    return args
  }

  /** Removes the groups once empty (their processes are gone); true when none is left. */
  removed(): boolean {
    let left = 0
    for (const d of this.dirs) {
      try {
        rmdirSync(d)
      } catch (err) {
        // EBUSY: a task is still exiting; ENOENT: gone already.
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') left++
      }
    }
    return left === 0
  }

  describe(): string {
    const { memoryMib, pids, cpuSeconds } = this.limits
    const how = this.cgroups ? 'cgroup v1 memory and pids' : 'rlimits: address space per process, processes per uid'
    return `memory ${memoryMib} MiB, ${pids} processes (${how}), CPU time ${cpuSeconds} s per process (rlimit)`
  }
}

/** This server's own branch of the memory and pids hierarchies. */
export interface CgroupRoot {
  memory: string
  pids: string
}

/**
 * Makes this process's cgroup branch (`troupe-<pid>` under the v1 memory and pids hierarchies), first removing the
 * empty branches of servers no longer running. Null where they are absent or not writable (no root, cgroup v2 only).
 */
export function openCgroupRoot(root = CGROUP_V1): CgroupRoot | null {
  const memory = path.join(root, 'memory')
  const pids = path.join(root, 'pids')
  if (!existsSync(path.join(memory, 'memory.limit_in_bytes')) || !existsSync(path.join(pids, 'cgroup.procs'))) return null
  for (const hierarchy of [memory, pids]) sweepDeadServers(hierarchy)
  const mine = { memory: path.join(memory, `troupe-${process.pid}`), pids: path.join(pids, `troupe-${process.pid}`) }
  try {
    mkdirSync(mine.memory, { recursive: true })
    mkdirSync(mine.pids, { recursive: true })
  } catch {
    return null
  }
  return mine
}

function sweepDeadServers(hierarchy: string): void {
  let names: string[]
  try {
    names = readdirSync(hierarchy)
  } catch {
    return
  }
  for (const name of names) {
    const pid = /^troupe-(\d+)$/.exec(name)?.[1]
    if (!pid || serverRuns(Number(pid))) continue
    const dir = path.join(hierarchy, name)
    try {
      for (const child of readdirSync(dir, { withFileTypes: true })) if (child.isDirectory()) rmdirSync(path.join(dir, child.name))
      rmdirSync(dir)
    } catch {
      // A group with a live task (cannot be, its server is gone and sandboxes die with it) or a race: next start.
    }
  }
}
