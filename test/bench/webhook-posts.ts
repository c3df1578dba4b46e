// The raw baseline of `npm run bench -- webhooks`, in a process of its own (as each orchestrator is): `n` HTTPS POSTs
// of one body to the receiver, a new TLS connection each as a delivery makes, `inFlight` at a time; prints the seconds.
import { readFileSync } from 'node:fs'
import https from 'node:https'
import { performance } from 'node:perf_hooks'
import { pathToFileURL } from 'node:url'
import { CERT } from '../webhooks/_helpers.js'

const ca = readFileSync(CERT)

/** One POST of `body` to the receiver on a new TLS connection (as actors/webhook/post.ts makes each attempt). */
export function rawPost(port: number, body: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: '127.0.0.1',
        port,
        servername: 'hooks.example.test',
        ca,
        path: '/raw',
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'webhook-id': 'raw' },
      },
      (res) => {
        res.resume()
        res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`raw POST: ${res.statusCode}`))))
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}

// Run as a script (not imported: the latency baseline uses rawPost in the benchmark's own process).
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [port, n, inFlight, body] = [Number(process.argv[2]), Number(process.argv[3]), Number(process.argv[4]), process.argv[5] ?? '{}']
  let next = 0
  const t0 = performance.now()
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next++ < n) await rawPost(port, body)
    }),
  )
  console.log(((performance.now() - t0) / 1000).toFixed(3))
}
