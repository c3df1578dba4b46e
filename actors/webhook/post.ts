import http from 'node:http'
import https from 'node:https'
import type { LookupFunction } from 'node:net'
import { NonPublicAddress, publicAddress, type Resolver } from '../kit/index.js'

/** What one delivery attempt came to. `redirected` and `refused` disable the endpoint; `failed` is tried again. */
export type Outcome =
  | { kind: 'delivered'; status: number }
  | { kind: 'redirected'; status: number }
  | { kind: 'refused'; why: string }
  | { kind: 'failed'; status?: number; why: string }

/** A development mapping (`TROUPE_WEBHOOK_DEV_HOSTS`): a listed host name is reached at a loopback address and port. */
export interface DevHost {
  address: string
  port: number
  /** Plain HTTP to that port, no TLS (a local receiver without a certificate: `troupe webhooks listen`). Default false. */
  plain?: boolean
}

export interface PostOptions {
  /** How host names resolve, at connect time. Default the system's resolver. */
  resolve: Resolver
  /** Host names reached elsewhere than DNS says, unchecked (development only). Default none. */
  devHosts?: ReadonlyMap<string, DevHost>
  /** The whole attempt (connect, send, the response's head and body) ends after this. */
  timeoutMs: number
  /** Trust for the receiver's certificate besides the system's (tests). Default none. */
  ca?: string | Buffer
}

/**
 * POSTs `body` to an https URL on port 443, as one attempt: connected to the address its host name resolves to now,
 * once that address is checked public (address.ts), and to nothing else; redirects never followed; any 2xx delivers.
 */
export function post(url: string, body: Uint8Array, headers: Record<string, string>, o: PostOptions): Promise<Outcome> {
  const u = new URL(url)
  const dev = o.devHosts?.get(u.hostname)
  let refusal: NonPublicAddress | undefined
  const lookup: LookupFunction = (hostname, options, cb) => {
    const pinned = dev ? Promise.resolve({ address: dev.address, family: dev.address.includes(':') ? 6 : 4 }) : publicAddress(hostname, o.resolve)
    pinned.then(
      ({ address, family }) => {
        if ((options as { all?: boolean }).all) (cb as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [{ address, family }])
        else cb(null, address, family)
      },
      (err: Error) => {
        if (err instanceof NonPublicAddress) refusal = err
        cb(err as NodeJS.ErrnoException, '', 0)
      },
    )
  }
  return new Promise<Outcome>((resolve) => {
    let settled = false
    const done = (outcome: Outcome) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      resolve(outcome)
    }
    // A development mapping may say plain HTTP: its loopback receiver needs no certificate.
    const request = dev?.plain ? http.request : https.request
    const req = request(
      {
        method: 'POST',
        host: u.hostname,
        port: dev?.port ?? 443,
        path: `${u.pathname}${u.search}`,
        servername: u.hostname,
        // The endpoint's own host name, also when a development mapping connects elsewhere.
        headers: { ...headers, host: u.host, 'content-type': 'application/json', 'content-length': String(body.byteLength) },
        lookup,
        agent: false,
        ...(o.ca ? { ca: o.ca } : {}),
      },
      (res) => {
        const status = res.statusCode ?? 0
        // The body is not read for anything: drained so the attempt ends when the receiver has answered.
        res.resume()
        res.on('end', () => {
          if (status >= 200 && status < 300) done({ kind: 'delivered', status })
          else if (status >= 300 && status < 400) done({ kind: 'redirected', status })
          else done({ kind: 'failed', status, why: `HTTP ${status}` })
        })
        res.on('error', (err) => done({ kind: 'failed', status, why: err.message }))
      },
    )
    const timer = setTimeout(() => {
      req.destroy(new Error(`no answer within ${o.timeoutMs} ms`))
    }, o.timeoutMs)
    req.on('error', (err) => {
      if (refusal) done({ kind: 'refused', why: refusal.message })
      else done({ kind: 'failed', why: err.message })
    })
    req.end(body)
  })
}
