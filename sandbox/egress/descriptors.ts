import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'

/** This process's RLIMIT_NOFILE, from /proc/self/limits (Linux); undefined elsewhere or when unlimited. */
export function fileLimit(): { soft: number; hard: number } | undefined {
  try {
    const m = /^Max open files\s+(\d+)\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))
    return m ? { soft: Number(m[1]), hard: Number(m[2]) } : undefined
  } catch {
    return undefined
  }
}

/**
 * Raises this process's soft descriptor limit to its hard limit (node has no setrlimit: util-linux's prlimit sets
 * it on this pid, which any process may do up to its hard limit). The limit in force after it, or undefined.
 */
export function raiseFileLimit(): { soft: number; hard: number } | undefined {
  const now = fileLimit()
  if (!now || now.soft >= now.hard) return now
  spawnSync('/usr/bin/prlimit', ['--pid', String(process.pid), `--nofile=${now.hard}:${now.hard}`], { stdio: 'ignore', timeout: 5_000 })
  return fileLimit()
}

/** Descriptors one proxied connection holds: the sandbox's end and the upstream one. */
const PER_CONNECTION = 2
/** How often at most the process's open descriptors are counted (a directory listing of /proc/self/fd). */
const COUNT_EVERY_MS = 250

/** The descriptors this process keeps for itself by default: a quarter of its limit, at least 1,024 (half a smaller one). */
export function defaultReserve(limit: number): number {
  return Math.max(Math.min(1024, Math.floor(limit / 2)), Math.floor(limit / 4))
}

/**
 * What every sandbox's egress proxy of this process shares: the descriptors left once the server's own reserve is
 * set aside (`TROUPE_FD_RESERVE`). A connection is admitted while the proxies' connections, two descriptors each,
 * stay within what is left, and while the process's open descriptors (counted at most every 250 ms) stay below the
 * limit less the reserve; so no sandbox, nor all of them together, takes the descriptors the server's own
 * connections (NATS, HTTP, the model's API) need.
 */
export class DescriptorGate {
  private open = 0
  private counted = 0
  private countedAt = 0

  /** `countOpen`: how many descriptors the process has open; default a listing of /proc/self/fd (tests pass their own). */
  constructor(
    readonly limit: number,
    readonly reserve: number,
    private readonly countOpen: () => number = countOwnDescriptors,
  ) {}

  /** Takes one connection's descriptors, or says why not. `release` gives them back. */
  take(): string | null {
    const usable = this.limit - this.reserve
    if ((this.open + 1) * PER_CONNECTION > usable || this.openDescriptors() >= usable) {
      return `the server keeps its last ${this.reserve} of ${this.limit} file descriptors for itself (TROUPE_FD_RESERVE), and the sandboxes' connections have the rest`
    }
    this.open++
    return null
  }

  release(): void {
    this.open = Math.max(0, this.open - 1)
  }

  private openDescriptors(): number {
    const now = Date.now()
    if (now - this.countedAt >= COUNT_EVERY_MS) {
      this.countedAt = now
      this.counted = this.countOpen()
    }
    return this.counted
  }
}

function countOwnDescriptors(): number {
  try {
    return readdirSync('/proc/self/fd').length
  } catch {
    return 0
  }
}
