import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { Webhook } from 'standardwebhooks'
import { WEBHOOK_EVENT_TYPES } from '../protocol/schemas/webhook.js'

export const LISTEN_USAGE = `usage: troupe webhooks listen [--port N] [--host NAME] [--server URL] [--types a,b,…] [--secret whsec_…]

  A webhook receiver on this machine for development: listens on 127.0.0.1:<port> (plain HTTP, no certificate) and
  prints each delivery, verified with the endpoint's signing secret (Standard Webhooks); a request that does not
  verify is answered 400 and printed as such.

  Without --secret it makes the endpoint: POST <server>/v1/webhooks for https://<host>/ with --types (default every
  type), retried until the server answers, and verifies with the secret that create shows. The server delivers
  here when it runs with TROUPE_WEBHOOK_DEV_HOSTS=<host>=http://127.0.0.1:<port> and an operator keyring.

  --port    default 8787 (0: any free port, printed)
  --host    the endpoint's host name, default hooks.troupe.test
  --server  the Troupe API, default http://127.0.0.1:8080
  --types   comma-separated event types, default all
  --secret  verify with this secret and make no endpoint (also TROUPE_WEBHOOK_SECRET)`

interface ListenOptions {
  port: number
  host: string
  server: string
  types: string[]
  secret?: string
}

/** Parses the arguments; a string says what is wrong. */
export function parseListen(args: string[], env: NodeJS.ProcessEnv): ListenOptions | string {
  const o: ListenOptions = { port: 8787, host: 'hooks.troupe.test', server: 'http://127.0.0.1:8080', types: [...WEBHOOK_EVENT_TYPES] }
  if (env.TROUPE_WEBHOOK_SECRET) o.secret = env.TROUPE_WEBHOOK_SECRET
  for (let i = 0; i < args.length; i++) {
    const flag = args[i]!
    const value = args[++i]
    if (value === undefined) return `${flag} needs a value`
    if (flag === '--port') {
      const port = Number(value)
      if (!Number.isInteger(port) || port < 0 || port > 65535) return `--port must be 0 to 65535 (was ${value})`
      o.port = port
    } else if (flag === '--host') o.host = value
    else if (flag === '--server') o.server = value.replace(/\/+$/, '')
    else if (flag === '--types') o.types = value.split(',').filter(Boolean)
    else if (flag === '--secret') o.secret = value
    else return `unknown option ${flag}`
  }
  return o
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Makes the endpoint, waiting (up to 2 minutes) for the server to answer; its signing secret. */
async function makeEndpoint(o: ListenOptions, say: (line: string) => void): Promise<string> {
  const body = JSON.stringify({ url: `https://${o.host}/`, event_types: o.types })
  const headers = { 'content-type': 'application/json', 'x-api-key': 'local', 'anthropic-version': '2023-06-01' }
  for (let waited = 0; ; waited += 500) {
    const r = await fetch(`${o.server}/v1/webhooks`, { method: 'POST', headers, body }).catch(() => undefined)
    if (r?.ok) {
      const e = (await r.json()) as { id: string; signing_secret: string }
      say(`endpoint ${e.id} made for https://${o.host}/ (${o.types.length} event types)`)
      return e.signing_secret
    }
    if (r) throw new Error(`the server refused the endpoint: ${r.status} ${(await r.text()).slice(0, 300)}`)
    if (waited >= 120_000) throw new Error(`no answer from ${o.server} within 2 minutes`)
    if (waited === 0) say(`waiting for the server at ${o.server}…`)
    await sleep(500)
  }
}

/** Runs the receiver until `signal` aborts; resolves with the exit code. */
export async function listen(o: ListenOptions, say: (line: string) => void, signal: AbortSignal): Promise<number> {
  const server = http.createServer()
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(o.port, '127.0.0.1', resolve)
  })
  const port = (server.address() as AddressInfo).port
  say(`listening on http://127.0.0.1:${port}`)
  say(`the server delivers here with TROUPE_WEBHOOK_DEV_HOSTS=${o.host}=http://127.0.0.1:${port}`)
  let verifier: Webhook | undefined
  server.on('request', (req, res) => {
    let body = ''
    req.setEncoding('utf8')
    req.on('data', (c) => (body += c))
    req.on('end', () => {
      const h = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]))
      const at = new Date().toISOString()
      try {
        if (!verifier) throw new Error('no signing secret yet')
        const e = verifier.verify(body, h) as { id?: string; created_at?: string; data?: Record<string, unknown> }
        const { type, id, ...more } = e.data ?? {}
        const extra = Object.entries(more)
          .filter(([k]) => k !== 'workspace_id')
          .map(([k, v]) => ` ${k}=${String(v)}`)
          .join('')
        say(`${at} verified ${String(type)} ${String(id)}${extra} (webhook-id ${e.id}, created ${e.created_at})`)
        res.writeHead(200).end()
      } catch (err) {
        say(`${at} NOT verified (${(err as Error).message}): webhook-id ${h['webhook-id'] ?? '–'}, ${body.length} bytes`)
        res.writeHead(400).end()
      }
    })
  })
  const closed = new Promise<void>((r) => signal.addEventListener('abort', () => server.close(() => r()), { once: true }))
  try {
    verifier = new Webhook(o.secret ?? (await makeEndpoint(o, say)))
  } catch (err) {
    server.close()
    throw err
  }
  await closed
  return 0
}
