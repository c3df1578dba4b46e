import { mkdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { newId } from '../protocol/ids.js'
import { LOCK_FILE, readLock, type LockInfo } from './lockfile-info.js'

const HOST_ID_FILE = 'host-id'

export interface DataDirLock {
  dir: string
  /** This data directory's host id: the same across restarts, so a restarted host takes back what it held. */
  hostId: string
  /** Adds what the lock should tell other tools (the NATS URL for `troupe sub`, the HTTP URL). */
  update(info: Partial<LockInfo>): void
  release(): void
}

/**
 * Takes the data directory for this process alone: the embedded nats-server's store and the sessions'
 * working directories cannot be shared. A lock left by a dead process is taken over (after making sure the
 * nats-server it ran is gone too); a live holder makes this throw, naming it.
 */
export function lockDataDir(dir: string, role: string): DataDirLock {
  mkdirSync(dir, { recursive: true })
  const file = path.join(dir, LOCK_FILE)
  let info: LockInfo = { pid: process.pid, proc_start: procStart(process.pid), started_at: Date.now(), role }
  const write = (flag: 'wx' | 'w') => writeFileSync(file, `${JSON.stringify(info)}\n`, { flag, mode: 0o600 })

  for (let attempt = 0; ; attempt++) {
    try {
      write('wx')
      break
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt >= 5) throw err
    }
    const held = readLock(file)
    if (held && isAlive(held)) {
      throw new Error(
        `the data directory ${dir} is in use by troupe ${held.role} (pid ${held.pid}, since ${new Date(held.started_at).toISOString()}` +
          `${held.http_url ? `, ${held.http_url}` : ''}); stop that process first, or set TROUPE_DATA_DIR to another directory`,
      )
    }
    if (!held) {
      // Being written by a process that just created it, or torn by a crash: look again before judging.
      sleepSync(50)
      if (!readLock(file) && attempt < 3) continue
    }
    if (held?.nats_pgid) stopOrphan(held.nats_pgid)
    // Move the stale lock aside rather than unlink it: of two processes taking over at once, only the one
    // whose rename still finds the stale file (with the pid it judged) goes on to create the new lock.
    const aside = `${file}.stale.${process.pid}`
    try {
      renameSync(file, aside)
    } catch {
      continue
    }
    const moved = readLock(aside)
    unlinkSync(aside)
    if (held && moved && moved.pid !== held.pid) {
      // We moved someone's fresh lock: put it back and report them.
      renameFresh(moved, file)
    }
  }

  const hostFile = path.join(dir, HOST_ID_FILE)
  let hostId: string
  try {
    hostId = readFileSync(hostFile, 'utf8').trim()
    if (!/^host_[0-9A-Za-z]{10,40}$/.test(hostId)) throw new Error('malformed')
  } catch {
    hostId = newId('host')
    writeFileSync(hostFile, `${hostId}\n`)
  }

  let released = false
  return {
    dir,
    hostId,
    update(more) {
      if (released) return
      info = { ...info, ...more }
      write('w')
    },
    release() {
      if (released) return
      released = true
      const cur = readLock(file)
      if (cur?.pid === process.pid) unlinkSync(file)
    },
  }
}

function renameFresh(info: LockInfo, file: string) {
  try {
    writeFileSync(file, `${JSON.stringify(info)}\n`, { flag: 'wx' })
  } catch {}
}

/** Alive, and the same process that wrote the lock (not a later one that got its pid). */
function isAlive(l: LockInfo): boolean {
  try {
    process.kill(l.pid, 0)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false
  }
  const start = procStart(l.pid)
  return l.proc_start === undefined || start === undefined || start === l.proc_start
}

function procStart(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Field 2 (the command) may hold spaces and parentheses: count fields after its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return Number(fields[19])
  } catch {
    return undefined
  }
}

/** True while any process of the group lives. */
export const groupAlive = (pgid: number) => {
  try {
    process.kill(-pgid, 0)
    return true
  } catch {
    return false
  }
}

/**
 * A dead holder's nats-server is stopped by its watchdog as soon as the holder dies; give it a moment to
 * flush, then make sure: two nats-servers on one store corrupt it.
 */
function stopOrphan(pgid: number) {
  const deadline = Date.now() + 5000
  while (groupAlive(pgid) && Date.now() < deadline) sleepSync(50)
  if (groupAlive(pgid)) {
    try {
      process.kill(-pgid, 'SIGKILL')
    } catch {}
    while (groupAlive(pgid) && Date.now() < deadline + 2000) sleepSync(20)
  }
}

function sleepSync(ms: number) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)
}
