import { readFileSync } from 'node:fs'
import path from 'node:path'
import { readConfig } from './config.js'

/** What `<data dir>/troupe.lock` says about the process that holds the directory (JSON). */
export interface LockInfo {
  pid: number
  /** The process's start time in clock ticks since boot (/proc/<pid>/stat field 22), so a reused pid is not taken for it. */
  proc_start?: number
  /** Epoch ms. */
  started_at: number
  role: string
  /** The embedded nats-server (its process group leads with this pid), when this process runs one. */
  nats_pgid?: number
  nats_url?: string
  nats_monitor_url?: string
  http_url?: string
}

export const LOCK_FILE = 'troupe.lock'

/** The lock's content, or undefined when it is absent, torn or not a lock. */
export function readLock(file: string): LockInfo | undefined {
  try {
    const v = JSON.parse(readFileSync(file, 'utf8')) as LockInfo
    return typeof v?.pid === 'number' ? v : undefined
  } catch {
    return undefined
  }
}

/** Where a tool should connect, and a hint to add when that fails. */
export interface NatsTarget {
  url: string
  /** Said after a connection error: where the URL came from. */
  hint?: string
}

/**
 * `NATS_URL` when set; else the NATS of the `troupe start` running on this data directory (`TROUPE_DATA_DIR`,
 * default ./.troupe), read from its lock file. Throws, saying what to do, when neither is there.
 */
export function findNats(env: NodeJS.ProcessEnv = process.env): NatsTarget {
  const cfg = readConfig(env, false)
  if (cfg.natsUrl) return { url: cfg.natsUrl }
  const file = path.join(cfg.dataDir, LOCK_FILE)
  const lock = readLock(file)
  if (!lock)
    throw new Error(
      `no running troupe in ${cfg.dataDir} (no ${LOCK_FILE} there); set NATS_URL or start one (\`troupe start\`; TROUPE_DATA_DIR picks the directory)`,
    )
  const holder = `troupe ${lock.role} (pid ${lock.pid}, started ${new Date(lock.started_at).toISOString()})`
  if (!lock.nats_url) throw new Error(`${holder} holds ${cfg.dataDir} but its ${LOCK_FILE} names no NATS URL yet (still starting?); set NATS_URL or try again`)
  return { url: lock.nats_url, hint: `the URL came from ${file}, written by ${holder}: is that process still running?` }
}
