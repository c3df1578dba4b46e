import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { serverRuns } from './servers.js'

const PREFIX = 'troupe-egress-pid'

/**
 * A fresh directory for one egress proxy's socket, in this server's `troupe-egress-<pid>` under the system's
 * temporary directory: short, since a Unix socket path may not exceed 107 bytes and a data directory's may. The
 * sandbox sees only its own (bound at /run/egress), so it is readable by all. Removed with its sandbox; a SIGKILLed
 * server's are removed by the next server to start (`sweepEgressDirs`).
 */
export function egressDirectory(): string {
  const mine = path.join(tmpdir(), `${PREFIX}${process.pid}`)
  mkdirSync(mine, { recursive: true, mode: 0o755 })
  const dir = mkdtempSync(path.join(mine, 's'))
  chmodSync(dir, 0o755)
  return dir
}

/** Removes the egress directories of servers no longer running. */
export function sweepEgressDirs(): void {
  let names: string[]
  try {
    names = readdirSync(tmpdir())
  } catch {
    return
  }
  for (const name of names) {
    const pid = name.startsWith(PREFIX) ? Number(name.slice(PREFIX.length)) : Number.NaN
    if (!Number.isInteger(pid) || pid === process.pid || serverRuns(pid)) continue
    rmSync(path.join(tmpdir(), name), { recursive: true, force: true })
  }
}
