// A minimal SSE reader for benchmarks: one `GET …/events/stream` over node:http (so a thousand of them can share
// an Agent without undici's per-origin limits), parsed by hand, with each event's arrival time taken when the
// chunk that completed it was read.
import http from 'node:http'
import { performance } from 'node:perf_hooks'

export interface SseMessage {
  event: string
  id: string | undefined
  data: string
  /** performance.now() when the chunk completing this message arrived. */
  at: number
}

export interface SseConnection {
  /** Resolves once the response headers (200) are in. */
  opened: Promise<void>
  close(): void
}

/** An agent without a socket cap, for many long-lived streams to one gateway. */
export const streamAgent = () => new http.Agent({ keepAlive: true, maxSockets: Infinity })

/**
 * Opens one SSE stream and calls `onMessage` for every complete message (comments skipped). `opened` rejects
 * on a non-200 status or a connection error before the headers.
 */
export function openSse(url: string, agent: http.Agent, onMessage: (m: SseMessage) => void): SseConnection {
  const u = new URL(url)
  let req: http.ClientRequest
  const opened = new Promise<void>((resolve, reject) => {
    req = http.request(
      { host: u.hostname, port: u.port, path: u.pathname + u.search, method: 'GET', agent, headers: { accept: 'text/event-stream' } },
      (res) => {
        if (res.statusCode !== 200) {
          let body = ''
          res.setEncoding('utf8')
          res.on('data', (d) => (body += d))
          res.on('end', () => reject(new Error(`stream ${url}: ${res.statusCode} ${body}`)))
          return
        }
        resolve()
        res.setEncoding('utf8')
        let buf = ''
        let event = ''
        let id: string | undefined
        let data: string[] = []
        res.on('data', (chunk: string) => {
          const at = performance.now()
          buf += chunk
          let nl: number
          while ((nl = buf.indexOf('\n')) >= 0) {
            let line = buf.slice(0, nl)
            buf = buf.slice(nl + 1)
            if (line.endsWith('\r')) line = line.slice(0, -1)
            if (line === '') {
              if (data.length || event) onMessage({ event: event || 'message', id, data: data.join('\n'), at })
              event = ''
              id = undefined
              data = []
              continue
            }
            if (line.startsWith(':')) continue
            const colon = line.indexOf(':')
            const field = colon < 0 ? line : line.slice(0, colon)
            let value = colon < 0 ? '' : line.slice(colon + 1)
            if (value.startsWith(' ')) value = value.slice(1)
            if (field === 'event') event = value
            else if (field === 'id') id = value
            else if (field === 'data') data.push(value)
          }
        })
        res.on('error', () => undefined)
      },
    )
    req.on('error', reject)
    req.end()
  })
  return {
    opened,
    close() {
      req.destroy()
    },
  }
}
