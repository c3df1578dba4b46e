import { readdirSync, readFileSync } from 'node:fs'

/**
 * Process bookkeeping through Linux /proc. Every function degrades to "unknown" elsewhere so
 * callers fall back to coarser kills (the shell's own group) rather than failing.
 */
interface ProcStat {
  /** Dead and not yet reaped: signals no longer reach it. */
  zombie: boolean
  pgrp: number
  session: number
  /** Foreground process group of the controlling terminal. */
  tpgid: number
}

export function readStat(pid: number): ProcStat | null {
  let text: string
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8')
  } catch {
    return null
  }
  // comm (field 2) is parenthesised and may contain spaces or ')', so parse after the last ')'.
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ')
  // rest[0] is field 3 (state): pgrp is field 5, session 6, tpgid 8.
  const pgrp = Number(rest[2])
  const session = Number(rest[3])
  const tpgid = Number(rest[5])
  if (!Number.isInteger(pgrp) || !Number.isInteger(session) || !Number.isInteger(tpgid)) return null
  return { zombie: rest[0] === 'Z', pgrp, session, tpgid }
}

/** Process group currently in the foreground of the shell's pty, if it is not the shell itself. */
export function foregroundGroup(shellPid: number): number | null {
  const st = readStat(shellPid)
  if (!st || st.tpgid <= 0 || st.tpgid === shellPid) return null
  return st.tpgid
}

/** Pids whose session is `sid`: the pty shell is a session leader, so this is everything it started that did not setsid away. */
export function sessionMembers(sid: number): number[] {
  let names: string[]
  try {
    names = readdirSync('/proc')
  } catch {
    return []
  }
  const pids: number[] = []
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue
    const pid = Number(name)
    if (readStat(pid)?.session === sid) pids.push(pid)
  }
  return pids
}

export function signalQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal)
  } catch {
    // Already gone, or not ours to kill; either way there is nothing more to do.
  }
}

/** SIGKILLs the whole session, repeating a few times to catch processes forked mid-sweep. */
export function killSession(sid: number): void {
  signalQuietly(-sid, 'SIGKILL')
  for (let round = 0; round < 3; round++) {
    const pids = sessionMembers(sid)
    if (pids.length === 0) return
    for (const pid of pids) signalQuietly(pid, 'SIGKILL')
  }
}

/**
 * SIGKILLs every member of session `sid` outside the process groups in `keep` (the sandbox's own bwrap processes and
 * the idle shell): what the shell started, foreground or background, goes; the shell and its state stay.
 */
export function killJobs(sid: number, keep: readonly number[]): void {
  // A fork bomb forks between one listing and its kills: sweep until a listing finds nothing alive (bounded, so a
  // process this server may not signal cannot hold it here).
  for (let round = 0; round < KILL_ROUNDS; round++) {
    const jobs = sessionMembers(sid).filter((pid) => {
      const st = readStat(pid)
      return st !== null && !st.zombie && !keep.includes(st.pgrp)
    })
    if (jobs.length === 0) return
    for (const pid of jobs) signalQuietly(pid, 'SIGKILL')
  }
}

/** Sweeps of `killJobs` at most. */
const KILL_ROUNDS = 100
