// An SSE reader that behaves like a careful client: it streams a session's events, and when the stream is cut
// (gateway killed, or silent past the keepalive because its process is stopped) it reconnects through the
// balancer with `Last-Event-ID`, recording every event id it sees, so the checks can find duplicates and gaps.
import http from 'node:http'
import type { Balancer } from './balancer.js'
import { CONNECT_FAILED, type Attempt, type ReaderRecord } from './types.js'

/** The hosts send a keepalive every second; this much silence means the gateway is not there any more. */
const SILENCE_MS = 5000
const RECONNECT_MS = 250

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export class SseReader {
  readonly rec: ReaderRecord
  /** Resolves once the first connection is open, so the driver's first POST is seen from the start. */
  readonly opened: Promise<void>
  private markOpened!: () => void
  private stopped = false
  private req: http.ClientRequest | undefined
  private loop: Promise<void> | undefined
  private readonly agent = new http.Agent({ keepAlive: false })

  /** `slot` spreads the readers over the gateways (by session they could all land on one). */
  constructor(
    readonly session: string,
    private readonly balancer: Balancer,
    private readonly slot: number,
  ) {
    this.rec = { session, ids: [], types: [], connects: 0, fromStart: false, cuts: [] }
    this.opened = new Promise((r) => (this.markOpened = r))
  }

  start(): void {
    this.loop = (async () => {
      for (let n = 0; !this.stopped; n++) {
        const reason = await this.connectOnce(n)
        if (this.stopped) break
        this.rec.cuts.push(reason)
        await sleep(RECONNECT_MS)
      }
    })()
  }

  async stop(): Promise<void> {
    this.stopped = true
    this.req?.destroy()
    await this.loop
    this.agent.destroy()
  }

  get lastId(): string | undefined {
    return this.rec.ids.at(-1)
  }

  /** One connection; resolves with why it ended. */
  private connectOnce(n: number): Promise<string> {
    const host = this.balancer.pick(this.session, n, this.slot)
    const path = `/v1/sessions/${this.session}/events/stream`
    const attempt: Attempt = {
      at: Date.now(),
      ms: 0,
      method: 'GET',
      path,
      session: this.session,
      backend: host?.name ?? 'none',
      client: 'sse',
      status: CONNECT_FAILED,
      retry: n,
    }
    this.balancer.attempts.push(attempt)
    if (!host?.url) return Promise.resolve('no gateway up')
    const u = new URL(path, host.url)
    const headers: Record<string, string> = {
      accept: 'text/event-stream',
      'x-api-key': 'chaos',
      'anthropic-version': '2023-06-01',
      'anthropic-beta': 'managed-agents-2026-04-01',
    }
    if (this.lastId) headers['last-event-id'] = this.lastId
    const t0 = performance.now()
    return new Promise<string>((resolve) => {
      let settled = false
      const done = (why: string) => {
        if (settled) return
        settled = true
        clearTimeout(silence)
        req.destroy()
        resolve(`${host.name}: ${why}`)
      }
      const silence = setTimeout(() => done(`silent for ${SILENCE_MS} ms`), SILENCE_MS)
      const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method: 'GET', headers, agent: this.agent }, (res) => {
        attempt.status = res.statusCode ?? 0
        attempt.ms = performance.now() - t0
        attempt.retryAfterMs = (res.headers['retry-after-ms'] as string | undefined) ?? undefined
        attempt.requestId = (res.headers['request-id'] as string | undefined) ?? undefined
        if (res.statusCode !== 200) {
          res.resume()
          res.on('end', () => done(`status ${res.statusCode}`))
          return
        }
        this.rec.connects++
        this.markOpened()
        res.setEncoding('utf8')
        let buf = ''
        let event = ''
        let id: string | undefined
        res.on('data', (chunk: string) => {
          silence.refresh()
          buf += chunk
          let nl: number
          while ((nl = buf.indexOf('\n')) >= 0) {
            let line = buf.slice(0, nl)
            buf = buf.slice(nl + 1)
            if (line.endsWith('\r')) line = line.slice(0, -1)
            if (line === '') {
              // Previews carry no id: only stored events count.
              if (id) {
                this.rec.ids.push(id)
                this.rec.types.push(event)
              }
              event = ''
              id = undefined
              continue
            }
            if (line.startsWith(':')) continue
            const colon = line.indexOf(':')
            const field = colon < 0 ? line : line.slice(0, colon)
            const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '')
            if (field === 'event') event = value
            else if (field === 'id') id = value
          }
        })
        res.on('end', () => done('stream ended'))
        res.on('error', (err) => done(`stream error: ${err.message}`))
      })
      this.req = req
      req.on('error', (err) => {
        attempt.ms ||= performance.now() - t0
        attempt.error = err.message
        done(`connection error: ${err.message}`)
      })
      req.end()
    })
  }
}
