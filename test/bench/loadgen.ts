// A closed-loop HTTP load generator in its own process, so it does not share an event loop with the
// server it measures. Prints one JSON line: {requests, rps, p50, p99, errors}. A body holding `__N__` gets a
// counter there, so each request writes something new (an update that changes nothing stores nothing). A URL
// holding `__ID__` takes the ids of the sixth argument (comma-separated) in turn, so concurrent writes spread over
// many records instead of contending for one. A seventh argument is sent as x-api-key on every request.
import http from 'node:http'

const [url, method, bodyArg, durationMs, connections, idsArg, apiKey] = process.argv.slice(2)
const keyHeader: Record<string, string> = apiKey ? { 'x-api-key': apiKey } : {}
const target = new URL(url!)
const ids = idsArg ? idsArg.split(',') : []
let nextId = 0
const nextPath = () => (ids.length ? target.pathname.replace('__ID__', ids[nextId++ % ids.length]!) : target.pathname)
const template = bodyArg && bodyArg !== '-' ? bodyArg : undefined
let n = 0
const nextBody = () => (template === undefined ? undefined : Buffer.from(template.includes('__N__') ? template.replaceAll('__N__', String(n++)) : template))
const agent = new http.Agent({ keepAlive: true, maxSockets: Number(connections) })
const latencies: number[] = []
let errors = 0
const end = Date.now() + Number(durationMs)

function once(): Promise<void> {
  const body = nextBody()
  return new Promise((resolve) => {
    const t0 = process.hrtime.bigint()
    const req = http.request(
      {
        host: target.hostname,
        port: target.port,
        path: nextPath() + target.search,
        method,
        agent,
        headers: body ? { ...keyHeader, 'content-type': 'application/json', 'content-length': body.length } : keyHeader,
      },
      (res) => {
        res.resume()
        res.on('end', () => {
          if (res.statusCode !== 200) errors++
          latencies.push(Number(process.hrtime.bigint() - t0) / 1e6)
          resolve()
        })
      },
    )
    req.on('error', () => {
      errors++
      resolve()
    })
    req.end(body)
  })
}

async function worker() {
  while (Date.now() < end) await once()
}

const started = Date.now()
await Promise.all(Array.from({ length: Number(connections) }, worker))
const elapsed = (Date.now() - started) / 1000
latencies.sort((a, b) => a - b)
const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? 0
console.log(JSON.stringify({ requests: latencies.length, rps: latencies.length / elapsed, p50: pct(0.5), p99: pct(0.99), errors }))
agent.destroy()
