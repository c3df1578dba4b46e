import { ApiError } from '../protocol/errors/api-error.js'
import { fail } from '../protocol/errors/fail.js'
import type { CallerKey } from '../protocol/schemas/api-key.js'
import type { KeyChecks } from './types.js'

/** How long a count of live hosts is used before it is asked again (ms): the hosts' heartbeat is 500 ms. */
const HOSTS_EVERY_MS = 250

interface Bucket {
  tokens: number
  at: number
  bytes: number
  bytesAt: number
}

/**
 * Each key's limits on this gateway: token buckets holding this host's share (1/N, N the live hosts) of the key's rate
 * and burst, and of its upload bytes per minute; nothing crosses NATS per request. Over any span t while N holds, the
 * cluster admits at most rate·t + burst requests of a key; while a host joins or leaves (until every host has seen the
 * heartbeats, about a second) at most (N+1)/N of that. A client whose requests reach one host only gets that host's
 * share: at worst rate/N (a load balancer spreading them evenly gets the whole rate).
 */
export class RateLimits {
  private readonly buckets = new Map<string, Bucket>()
  private n = 1
  private nAt = Number.NEGATIVE_INFINITY

  constructor(private readonly hosts: () => number) {}

  private share(now: number): number {
    if (now - this.nAt > HOSTS_EVERY_MS) {
      this.n = Math.max(1, this.hosts())
      this.nAt = now
    }
    return this.n
  }

  private bucket(key: CallerKey, now: number): Bucket {
    let b = this.buckets.get(key.id)
    if (!b) {
      // A key first seen here starts full: its burst is what it may send at once.
      b = { tokens: Number.POSITIVE_INFINITY, at: now, bytes: Number.POSITIVE_INFINITY, bytesAt: now }
      this.buckets.set(key.id, b)
    }
    return b
  }

  /** Takes one request of `key`'s: 0 when admitted, else the ms until it would be. */
  request(key: CallerKey, now: number): number {
    const rate = key.limits.requests_per_second
    if (rate <= 0) return 0
    const n = this.share(now)
    const perMs = rate / n / 1000
    const cap = Math.max(1, (key.limits.burst || rate) / n)
    const b = this.bucket(key, now)
    b.tokens = Math.min(cap, b.tokens + (now - b.at) * perMs)
    b.at = now
    if (b.tokens >= 1) {
      b.tokens -= 1
      return 0
    }
    return Math.ceil((1 - b.tokens) / perMs)
  }

  /**
   * Takes `bytes` of an upload of `key`'s: 0 when admitted, else the ms until it would be. An upload larger than this
   * host's minute share goes when the share is whole, and the debt waits out the next ones.
   */
  upload(key: CallerKey, bytes: number, now: number): number {
    const perMinute = key.limits.upload_bytes_per_minute
    if (perMinute <= 0 || bytes <= 0) return 0
    const n = this.share(now)
    const cap = perMinute / n
    const perMs = cap / 60_000
    const b = this.bucket(key, now)
    b.bytes = Math.min(cap, b.bytes + (now - b.bytesAt) * perMs)
    b.bytesAt = now
    const need = Math.min(bytes, cap)
    if (b.bytes >= need) {
      b.bytes -= bytes
      return 0
    }
    return Math.ceil((need - b.bytes) / perMs)
  }
}

/** How long a key at its running sessions is asked to wait: sessions end on their own time, so a guess. */
const SESSIONS_RETRY_MS = 2000

/**
 * The 429 of events sent to a session that is not running, by a key whose sessions running now are at its
 * `concurrent_sessions` (0: no limit); undefined when they may go. Counted from this host's watch of the sessions
 * (actors/session/history/running-by-key.ts), so nothing crosses NATS.
 */
export function sessionsFull(keys: KeyChecks, key: CallerKey, sessionId: string): ApiError | undefined {
  const limit = key.limits.concurrent_sessions
  if (limit <= 0 || keys.sessionRunning(sessionId) || keys.runningSessions(key.id) < limit) return undefined
  return rateLimited('concurrent running sessions', limit, SESSIONS_RETRY_MS)
}

/** The 429 of a key over `limit` `what`, asking the client to wait `ms`. */
export const rateLimited = (what: string, limit: number, ms: number): ApiError =>
  new ApiError({ ...fail('rate_limited', what, limit).toData(), retryAfterMs: ms })
