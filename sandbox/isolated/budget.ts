import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs'
import { totalmem } from 'node:os'
import path from 'node:path'
import { serverRuns } from './servers.js'

/** What all the sandboxes of one server may use together (the parent group of every sandbox's groups). */
export interface SandboxesBudget {
  /** Memory of every sandbox together, in MiB. `TROUPE_SANDBOXES_MEMORY_MIB`, default three quarters of the machine's. */
  memoryMib: number
  /** Processes and threads of every sandbox together. `TROUPE_SANDBOXES_PIDS`, default half the kernel's pid_max. */
  pids: number
}

/** The machine's memory and pid space, shared out by default: a quarter of the memory and half the pids stay the host's. */
export function defaultBudget(): SandboxesBudget {
  let pidMax = 32_768
  try {
    pidMax = Number(readFileSync('/proc/sys/kernel/pid_max', 'utf8').trim()) || pidMax
  } catch {}
  return { memoryMib: Math.floor((totalmem() / 1024 / 1024) * 0.75), pids: Math.floor(pidMax / 2) }
}

/**
 * A new sandbox is admitted only while the budget has this much left: what bwrap, bash, the forwarder and the file
 * tools' node take to start (node alone runs a dozen threads).
 */
export const ADMISSION = { memoryMib: 128, pids: 24 }

const CGROUP_V1 = '/sys/fs/cgroup'

/**
 * This server's own branch of the v1 memory and pids hierarchies (`troupe-<pid>`), the parent of each sandbox's
 * groups, limited to the budget: the kernel holds all the sandboxes together to it (a fork past it fails, memory past
 * it is reclaimed or OOM-killed inside the branch, never outside it), and `admit` refuses a new sandbox when it is
 * nearly spent.
 */
export class CgroupRoot {
  constructor(
    readonly memory: string,
    readonly pids: string,
    readonly budget: SandboxesBudget,
  ) {}

  /** Why a new sandbox may not start now (the budget is spent, naming the setting), or null. */
  admit(): string | null {
    const pidsUsed = readNumber(path.join(this.pids, 'pids.current'))
    if (pidsUsed !== undefined && this.budget.pids - pidsUsed < ADMISSION.pids) {
      return `the host's sandbox budget is full: its sandboxes run ${pidsUsed} of the ${this.budget.pids} processes and threads they may have together (TROUPE_SANDBOXES_PIDS)`
    }
    const used = workingSet(this.memory)
    if (used !== undefined && this.budget.memoryMib * 1024 * 1024 - used < ADMISSION.memoryMib * 1024 * 1024) {
      const mib = Math.round(used / 1024 / 1024)
      return `the host's sandbox budget is full: its sandboxes use ${mib} of the ${this.budget.memoryMib} MiB of memory they may have together (TROUPE_SANDBOXES_MEMORY_MIB)`
    }
    return null
  }

  /** Bytes of memory the sandboxes hold together now (their working set), when the kernel says. */
  usedBytes(): number | undefined {
    return workingSet(this.memory)
  }
}

/**
 * Makes this process's branch with the budget's limits, first removing the empty branches of servers no longer
 * running. Null where the hierarchies are absent or not writable (no root, cgroup v2 only).
 */
export function openCgroupRoot(budget: SandboxesBudget = defaultBudget(), root = CGROUP_V1): CgroupRoot | null {
  const memory = path.join(root, 'memory')
  const pids = path.join(root, 'pids')
  if (!existsSync(path.join(memory, 'memory.limit_in_bytes')) || !existsSync(path.join(pids, 'cgroup.procs'))) return null
  for (const hierarchy of [memory, pids]) sweepDeadServers(hierarchy)
  const mine = new CgroupRoot(path.join(memory, `troupe-${process.pid}`), path.join(pids, `troupe-${process.pid}`), budget)
  try {
    mkdirSync(mine.memory, { recursive: true })
    mkdirSync(mine.pids, { recursive: true })
    const bytes = String(budget.memoryMib * 1024 * 1024)
    // memsw is at least memory: lower memory first when both shrink, raise memsw first when both grow.
    const memsw = path.join(mine.memory, 'memory.memsw.limit_in_bytes')
    const order = existsSync(memsw) ? [memsw, path.join(mine.memory, 'memory.limit_in_bytes'), memsw] : [path.join(mine.memory, 'memory.limit_in_bytes')]
    for (const file of order) {
      try {
        writeFileSync(file, bytes)
      } catch (err) {
        if (file !== memsw) throw err
      }
    }
    writeFileSync(path.join(mine.pids, 'pids.max'), String(budget.pids))
  } catch {
    return null
  }
  return mine
}

/** Bytes the branch's processes hold that cannot simply be dropped: its usage less the inactive file cache. */
function workingSet(memory: string): number | undefined {
  const usage = readNumber(path.join(memory, 'memory.usage_in_bytes'))
  if (usage === undefined) return undefined
  let inactive = 0
  try {
    const m = /^total_inactive_file (\d+)$/m.exec(readFileSync(path.join(memory, 'memory.stat'), 'utf8'))
    inactive = m ? Number(m[1]) : 0
  } catch {}
  return Math.max(0, usage - inactive)
}

function readNumber(file: string): number | undefined {
  try {
    const n = Number(readFileSync(file, 'utf8').trim())
    return Number.isFinite(n) ? n : undefined
  } catch {
    return undefined
  }
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
