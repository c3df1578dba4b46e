import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'

/** A process as /proc shows it; `start` (clock ticks after boot) tells it from a later process with the same pid. */
export interface Proc {
  pid: number
  ppid: number
  start: number
  comm: string
}

/** One process from /proc/<pid>/stat; undefined once it is gone (or a zombie: it runs nothing any more). */
export function procOf(pid: number): Proc | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The command name is in parentheses and may hold spaces or parentheses itself: the fields follow the last `)`.
    const close = stat.lastIndexOf(')')
    const fields = stat.slice(close + 2).split(' ')
    if (fields[0] === 'Z') return undefined
    return { pid, ppid: Number(fields[1]), start: Number(fields[19]), comm: stat.slice(stat.indexOf('(') + 1, close) }
  } catch {
    return undefined
  }
}

/** Every live process on the machine. */
export function allProcs(): Proc[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map((d) => procOf(Number(d)))
    .filter((p): p is Proc => p !== undefined)
}

/** The processes descended from `pid` (children, theirs, …), found while `pid` still lives (an orphan is re-parented). */
export function descendantsOf(pid: number): Proc[] {
  const procs = allProcs()
  const out: Proc[] = []
  const parents = new Set([pid])
  for (let grew = true; grew; ) {
    grew = false
    for (const p of procs) {
      if (!parents.has(p.pid) && parents.has(p.ppid)) {
        parents.add(p.pid)
        out.push(p)
        grew = true
      }
    }
  }
  return out
}

/** Whether this very process (same pid, same start) still runs. */
export const stillRuns = (p: Proc): boolean => procOf(p.pid)?.start === p.start

/** Host pids whose command line is exactly `args`. */
export const pidsOf = (args: string): number[] =>
  execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' })
    .split('\n')
    .map((l) => l.trim().match(/^(\d+) (.*)$/))
    .filter((m) => m?.[2] === args)
    .map((m) => Number(m![1]))

/** The states (`R`, `S`, `T`, …) of every thread of every process in group `pgid`. */
function groupThreadStates(pgid: number): string[] {
  const states: string[] = []
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8')
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]) !== pgid) continue
      for (const task of readdirSync(`/proc/${d}/task`)) {
        const ts = readFileSync(`/proc/${d}/task/${task}/stat`, 'utf8')
        states.push(ts.slice(ts.lastIndexOf(')') + 2).split(' ')[0]!)
      }
    } catch {
      // Gone meanwhile.
    }
  }
  return states
}

/**
 * SIGSTOPs a process group and resolves once every thread of it has stopped: kill() returns before a signal is
 * delivered, and a thread running on another core may still answer a request or two in between.
 */
export async function pauseGroup(pgid: number): Promise<void> {
  process.kill(-pgid, 'SIGSTOP')
  const deadline = Date.now() + 5000
  while (!groupThreadStates(pgid).every((s) => s === 'T' || s === 't')) {
    if (Date.now() > deadline) throw new Error(`process group ${pgid} did not stop within 5 s`)
    await new Promise((r) => setTimeout(r, 5))
  }
}
