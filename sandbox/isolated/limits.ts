import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import type { CgroupRoot } from './budget.js'

/** What one session's sandbox may use. */
export interface SandboxLimits {
  /** Memory of everything in the sandbox together, in MiB. `TROUPE_SANDBOX_MEMORY_MIB`, default 2048. */
  memoryMib: number
  /** Processes (and threads) alive at once. `TROUPE_SANDBOX_PIDS`, default 256. */
  pids: number
  /** CPU seconds each process may use (RLIMIT_CPU; SIGKILL past it). `TROUPE_SANDBOX_CPU_SECONDS`, default 3600. */
  cpuSeconds: number
  /** Files each process may have open (RLIMIT_NOFILE, soft and hard). `TROUPE_SANDBOX_FILES`, default 1024. */
  files: number
  /**
   * MiB the session may keep in its writable directories together (disk.ts), and the largest file a process may
   * write (RLIMIT_FSIZE). `TROUPE_SANDBOX_DISK_MIB`, default 4096.
   */
  diskMib: number
}

export const DEFAULT_LIMITS: SandboxLimits = { memoryMib: 2048, pids: 256, cpuSeconds: 3600, files: 1024, diskMib: 4096 }

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
    const { cpuSeconds, files, diskMib } = this.limits
    const args = [`--cpu=${cpuSeconds}`, '--core=0', `--nofile=${files}`, `--fsize=${diskMib * 1024 * 1024}`]
    if (this.cgroups) return args
    if (addressSpace) args.push(`--as=${this.limits.memoryMib * 1024 * 1024}`)
    args.push(`--nproc=${this.limits.pids}`)
    return args
  }

  /** Why this sandbox may not start a process now: it has none running, and the host's budget is spent (budget.ts). */
  admit(): string | null {
    if (!this.cgroups) return null
    const pids = this.dirs[1]!
    try {
      if (Number(readFileSync(path.join(pids, 'pids.current'), 'utf8')) > 0) return null
    } catch {}
    return this.cgroups.admit()
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
    const { memoryMib, pids, cpuSeconds, files, diskMib } = this.limits
    const how = this.cgroups ? 'cgroup v1 memory and pids' : 'rlimits: address space per process, processes per uid'
    const all = this.cgroups
      ? `; all sandboxes together ${this.cgroups.budget.memoryMib} MiB and ${this.cgroups.budget.pids} processes (cgroup, a new sandbox refused when full)`
      : '; no budget for all sandboxes together (cgroups not writable)'
    return (
      `memory ${memoryMib} MiB, ${pids} processes (${how}), CPU time ${cpuSeconds} s and ${files} open files per process (rlimit), ` +
      `disk ${diskMib} MiB (looked at after each tool that writes and every 2 s; no file larger, rlimit)${all}`
    )
  }
}
