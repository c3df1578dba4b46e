import { closeSync, constants, fstatSync, ftruncateSync, mkdirSync, openSync, readFileSync, statSync, unlinkSync, writeFileSync, writeSync } from 'node:fs'
import path from 'node:path'
import { tryLock } from 'fs-native-extensions'
import { newId } from '../protocol/ids.js'
import { isHostId } from '../protocol/subjects.js'
import { LOCK_FILE, readLock, type LockInfo } from './lockfile-info.js'

const HOST_ID_FILE = 'host-id'
/** How long a lock may stay held with no live holder named in it before its holder's nats-server is killed. */
const DEAD_HOLDER_GRACE_MS = 5000
/** And after that kill, before giving up. */
const KILL_GRACE_MS = 2000

export interface DataDirLock {
  dir: string
  /** This data directory's host id: the same across restarts, so a restarted host takes back what it held. */
  hostId: string
  /**
   * The open lock file. A child given it (as an inherited descriptor) holds the directory with this process, until
   * both have exited: the embedded nats-server does, so no newcomer opens its store while it still runs.
   */
  fd: number
  /** Adds what the lock should tell other tools (the NATS URL for `troupe sub`, the HTTP URL). */
  update(info: Partial<LockInfo>): void
  release(): void
}

/**
 * Takes the data directory for this process alone: the embedded nats-server's store and the sessions' working
 * directories cannot be shared. The hold is an OS lock on `troupe.lock` (an open file description lock), which the
 * kernel releases the moment the last descriptor sharing it closes: a process killed in any way (a zombie not yet
 * reaped included) frees it, with its nats-server. A live holder makes this throw, naming it.
 */
export function lockDataDir(dir: string, role: string): DataDirLock {
  mkdirSync(dir, { recursive: true })
  const file = path.join(dir, LOCK_FILE)
  const fd = takeLock(dir, file)
  let info: LockInfo = { pid: process.pid, proc_start: procStat(process.pid)?.start, started_at: Date.now(), role }
  // Written in place, never renamed: the lock is on this file.
  const write = () => {
    const json = Buffer.from(`${JSON.stringify(info)}\n`)
    writeSync(fd, json, 0, json.length, 0)
    ftruncateSync(fd, json.length)
  }
  write()

  const hostFile = path.join(dir, HOST_ID_FILE)
  let hostId: string
  try {
    hostId = readFileSync(hostFile, 'utf8').trim()
    if (!isHostId(hostId)) throw new Error('malformed')
  } catch {
    hostId = newId('host')
    writeFileSync(hostFile, `${hostId}\n`)
  }

  let released = false
  return {
    dir,
    hostId,
    fd,
    update(more) {
      if (released) return
      info = { ...info, ...more }
      write()
    },
    release() {
      if (released) return
      released = true
      // Unlinked before it is let go, so `troupe sub` and a newcomer find no name of a gone process.
      if (isSameFile(fd, file)) unlinkSync(file)
      closeSync(fd)
    },
  }
}

/** The descriptor of `file`, locked; throws naming a live holder. */
function takeLock(dir: string, file: string): number {
  let deadline = Date.now() + DEAD_HOLDER_GRACE_MS
  let killed = false
  for (;;) {
    const fd = openSync(file, constants.O_RDWR | constants.O_CREAT, 0o600)
    if (tryLock(fd)) {
      // A holder that let go unlinked the file we opened: lock the one now at that path.
      if (isSameFile(fd, file)) return fd
      closeSync(fd)
      continue
    }
    closeSync(fd)
    const held = readLock(file)
    if (held && isAlive(held)) {
      throw new Error(
        `the data directory ${dir} is in use by troupe ${held.role} (pid ${held.pid}, since ${new Date(held.started_at).toISOString()}` +
          `${held.http_url ? `, ${held.http_url}` : ''}); stop that process first, or set TROUPE_DATA_DIR to another directory`,
      )
    }
    // Held, and no live process named: the holder died and its nats-server (which holds the lock too) is still
    // flushing its store, or a newcomer has just taken the lock and not yet written its name. Wait for either.
    if (Date.now() > deadline) {
      if (killed || !held?.nats_pgid) {
        throw new Error(
          `the data directory ${dir} stays locked (${LOCK_FILE}) though ${held ? `troupe ${held.role} pid ${held.pid} has exited` : 'no process is named in it'}; ` +
            'a process it started may still run: stop it, or set TROUPE_DATA_DIR to another directory',
        )
      }
      // Its watchdog stops it when its parent dies; one that has not stopped by now hangs.
      try {
        process.kill(-held.nats_pgid, 'SIGKILL')
      } catch {}
      killed = true
      deadline = Date.now() + KILL_GRACE_MS
    }
    sleepSync(20)
  }
}

function isSameFile(fd: number, file: string): boolean {
  try {
    const a = fstatSync(fd)
    const b = statSync(file)
    return a.ino === b.ino && a.dev === b.dev
  } catch {
    return false
  }
}

/** Running, and the same process that wrote the lock (not a later one that got its pid). A zombie has exited. */
function isAlive(l: LockInfo): boolean {
  const stat = procStat(l.pid)
  if (!stat) {
    try {
      process.kill(l.pid, 0)
      return true
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'EPERM'
    }
  }
  if (stat.state === 'Z' || stat.state === 'X') return false
  return l.proc_start === undefined || stat.start === l.proc_start
}

/** From /proc/<pid>/stat: the state (field 3) and the start time in clock ticks since boot (field 22). */
function procStat(pid: number): { state: string; start: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Field 2 (the command) may hold spaces and parentheses: count fields after its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return { state: fields[0]!, start: Number(fields[19]) }
  } catch {
    return undefined
  }
}

function sleepSync(ms: number) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)
}
