import { readFileSync } from 'node:fs'
import https from 'node:https'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { newId } from '../../protocol/ids.js'
import { keyringFile, newKey } from '../vaults/_helpers.js'

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
  /** The receiver's port it came in on (with `ports` > 1, which sender it was). */
  port: number
}

/**
 * A local HTTPS receiver with the test certificate (its names: hooks.example.test, other.example.test), reached through
 * TROUPE_WEBHOOK_DEV_HOSTS. Answers 200 unless `answer` says otherwise for a request: a status, later (a promise), or never.
 * With `ports` > 1 it listens on that many ports, one per sender to tell apart (`envFor(i)`).
 */
export async function startReceiver(answer: (r: Received) => number | 'hang' | Promise<number> = () => 200, { ports = 1 } = {}) {
  const cert = readFileSync(CERT)
  const key = readFileSync(new URL('../fixtures/webhook-receiver.key', import.meta.url))
  const got: Received[] = []
  const servers = Array.from({ length: ports }, () =>
    https.createServer({ cert, key }, (req, res) => {
      let body = ''
      req.on('data', (c) => (body += c))
      req.on('end', () => {
        const r: Received = {
          path: req.url ?? '',
          headers: req.headers as Record<string, string>,
          body,
          at: Date.now(),
          answered: false,
          port: req.socket.localPort ?? 0,
        }
        got.push(r)
        res.on('finish', () => (r.answered = !req.socket.destroyed))
        const a = answer(r)
        if (a === 'hang') return
        if (typeof a === 'number') res.writeHead(a).end()
        else void a.then((status) => res.writeHead(status).end())
      })
    }),
  )
  for (const server of servers) await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const listening = servers.map((s) => (s.address() as AddressInfo).port)
  /** What a troupe process needs to reach port `i`: the dev host mapping and the CA that trusts its certificate. */
  const envFor = (i: number) => ({
    TROUPE_WEBHOOK_DEV_HOSTS: `hooks.example.test=127.0.0.1:${listening[i]},other.example.test=127.0.0.1:${listening[i]}`,
    NODE_EXTRA_CA_CERTS: CERT,
  })
  return {
    port: listening[0]!,
    ports: listening,
    got,
    env: envFor(0),
    envFor,
    close: () => {
      for (const server of servers) {
        server.closeAllConnections()
        server.close()
      }
    },
  }
}

/**
 * The environment of a host that delivers webhooks to `receiver` (a fresh keyring, the receiver's dev host mapping)
 * and runs turns on the fake `model` (retried quickly), with `extra` on top.
 */
export function deliveringEnv(receiver: { env: Record<string, string> }, model: { url: string }, extra: Record<string, string> = {}) {
  return {
    TROUPE_VAULT_KEYRING_FILE: keyringFile([{ id: 'k1', key: newKey() }]),
    ...receiver.env,
    TROUPE_MODEL_BASE_URL: model.url,
    ANTHROPIC_API_KEY: 'fake-key',
    TROUPE_MODEL_RETRY_BASE_MS: '20',
    ...extra,
  }
}
