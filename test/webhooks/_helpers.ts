import { readFileSync } from 'node:fs'
import https from 'node:https'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { newId } from '../../protocol/ids.js'

/** A webhook event as a delivery carries it: a fresh `whe_` id and the exact JSON bytes of its thin payload. */
export function eventOf(type = 'session.status_idled'): { id: string; body: string; bytes: Uint8Array } {
  const id = newId('whe')
  const body = JSON.stringify({ type: 'event', id, created_at: new Date().toISOString(), data: { type, id: 'sesn_01X', workspace_id: 'wrkspc_troupe' } })
  return { id, body, bytes: new TextEncoder().encode(body) }
}

/** The test certificate's file (a receiver's CA for the processes that deliver to it). */
export const CERT = fileURLToPath(new URL('../fixtures/webhook-receiver.crt', import.meta.url))

/** One request the receiver got. */
export interface Received {
  path: string
  headers: Record<string, string>
  body: string
  at: number
  /** Its answer reached the sender (false while it is pending, and for ever if the sender went away first). */
  answered: boolean
}

/**
 * A local HTTPS receiver with the test certificate (its names: hooks.example.test, other.example.test), reached through
 * TROUPE_WEBHOOK_DEV_HOSTS. Answers 200 unless `answer` says otherwise for a request: a status, later (a promise), or never.
 */
export async function startReceiver(answer: (r: Received) => number | 'hang' | Promise<number> = () => 200) {
  const cert = readFileSync(CERT)
  const key = readFileSync(new URL('../fixtures/webhook-receiver.key', import.meta.url))
  const got: Received[] = []
  const server = https.createServer({ cert, key }, (req, res) => {
    let body = ''
    req.on('data', (c) => (body += c))
    req.on('end', () => {
      const r: Received = { path: req.url ?? '', headers: req.headers as Record<string, string>, body, at: Date.now(), answered: false }
      got.push(r)
      res.on('finish', () => (r.answered = !req.socket.destroyed))
      const a = answer(r)
      if (a === 'hang') return
      if (typeof a === 'number') res.writeHead(a).end()
      else void a.then((status) => res.writeHead(status).end())
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const port = (server.address() as AddressInfo).port
  return {
    port,
    got,
    /** What the troupe processes need to reach it: the dev host mapping and the CA that trusts its certificate. */
    env: { TROUPE_WEBHOOK_DEV_HOSTS: `hooks.example.test=127.0.0.1:${port},other.example.test=127.0.0.1:${port}`, NODE_EXTRA_CA_CERTS: CERT },
    close: () => {
      server.closeAllConnections()
      server.close()
    },
  }
}
