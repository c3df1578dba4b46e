// A client-side stand-in for the load balancer in front of the gateways, handed to the official client as its
// `fetch`: it health-checks every gateway (/healthz), keeps a session on one gateway, moves each retry to the next
// healthy one (as a balancer retrying elsewhere would), and records every HTTP attempt for the checks.
import { fnv1a } from '../../protocol/hash.js'
import type { Host } from './hosts.js'
import { CONNECT_FAILED, TIMED_OUT, type Attempt } from './types.js'

/** The official client's base URL: the balancer replaces the origin with a gateway's. */
export const VIRTUAL_ORIGIN = 'http://troupe.chaos.invalid'

/** Each client of the run names itself in this header, so the report can tell probes from load. */
export const CLIENT_HEADER = 'x-chaos-client'

const HEALTH_EVERY_MS = 500
const HEALTH_TIMEOUT_MS = 800
const SESSION_IN_PATH = /^\/v1\/sessions\/(sesn_[0-9A-Za-z]+)/

export class Balancer {
  readonly attempts: Attempt[] = []
  private readonly healthy = new Map<string, boolean>()
  private timer: NodeJS.Timeout | undefined
  private rr = 0

  constructor(private readonly hosts: readonly Host[]) {}

  start(): void {
    const check = async () => {
      await Promise.all(
        this.hosts.map(async (h) => {
          if (!h.url) return this.healthy.set(h.name, false)
          try {
            const res = await globalThis.fetch(`${h.url}/healthz`, { signal: AbortSignal.timeout(HEALTH_TIMEOUT_MS) })
            await res.arrayBuffer()
            this.healthy.set(h.name, res.ok)
          } catch {
            this.healthy.set(h.name, false)
          }
        }),
      )
      if (this.timer) this.timer = setTimeout(check, HEALTH_EVERY_MS)
    }
    this.timer = setTimeout(check, 0)
  }

  stop(): void {
    clearTimeout(this.timer)
    this.timer = undefined
  }

  /**
   * The gateway for a request: healthy ones first (a process that just died or stopped may not have failed its
   * check yet; then any with a URL), chosen by session (sticky) or by an explicit slot, and moved along by the
   * retry count.
   */
  pick(session: string | undefined, retry: number, slot?: number): Host | undefined {
    const up = this.hosts.filter((h) => h.url)
    const ok = up.filter((h) => this.healthy.get(h.name) !== false)
    const pool = ok.length ? ok : up
    if (!pool.length) return undefined
    const base = slot ?? (session ? fnv1a(session) : this.rr++)
    return pool[(base + retry) % pool.length]
  }

  /** A `fetch` for `new Anthropic({ baseURL: VIRTUAL_ORIGIN, fetch })`. */
  readonly fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = new URL(typeof input === 'string' || input instanceof URL ? input.toString() : input.url)
    // The official client probes a custom fetch with `fetch('data:,')` before its first multipart upload (to find its
    // Response class): not a request to any gateway.
    if (url.protocol === 'data:') return globalThis.fetch(url, init)
    const headers = new Headers(init?.headers)
    const retry = Number(headers.get('x-stainless-retry-count') ?? 0) || 0
    const session = SESSION_IN_PATH.exec(url.pathname)?.[1]
    const host = this.pick(session, retry)
    const attempt: Attempt = {
      at: Date.now(),
      ms: 0,
      method: (init?.method ?? 'GET').toUpperCase(),
      path: url.pathname,
      session,
      backend: host?.name ?? 'none',
      client: headers.get(CLIENT_HEADER) ?? 'other',
      status: CONNECT_FAILED,
      key: headers.get('idempotency-key') ?? undefined,
      retry,
    }
    this.attempts.push(attempt)
    const t0 = performance.now()
    try {
      if (!host?.url) throw new TypeError('fetch failed: no gateway is up')
      const target = new URL(url.pathname + url.search, host.url)
      const res = await globalThis.fetch(target, init)
      attempt.status = res.status
      attempt.retryAfterMs = res.headers.get('retry-after-ms') ?? undefined
      attempt.requestId = res.headers.get('request-id') ?? undefined
      // The error's message is the evidence a report needs; a copy, so the client still reads the body itself.
      if (res.status >= 400)
        res
          .clone()
          .text()
          .then(
            (t) => (attempt.error = t.slice(0, 300)),
            () => undefined,
          )
      return res
    } catch (err) {
      const e = err as Error
      attempt.status = e.name === 'AbortError' || e.name === 'TimeoutError' ? TIMED_OUT : CONNECT_FAILED
      attempt.error = `${e.message}${e.cause ? `: ${(e.cause as Error).message ?? String(e.cause)}` : ''}`
      throw err
    } finally {
      attempt.ms = performance.now() - t0
    }
  }
}
