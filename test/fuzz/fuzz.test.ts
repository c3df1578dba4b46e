import t from 'tap'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import '../helpers/keepalive.js'
import { judge } from './checks.js'
import { groupFailures } from './report.js'
import { runFuzz } from './runner.js'
import type { HttpSpec } from './types.js'
import { exchange, frame } from './wire.js'

// A short, fixed run of `npm run fuzz` in the test suite: every request class, every route, the raw
// parser cases that fit in 300 requests. Longer runs: `npm run fuzz -- --requests 2000 --seed N`.
const SEED = 1
const REQUESTS = 300

t.test(`fuzz: seed ${SEED}, ${REQUESTS} hostile requests`, async (t) => {
  const lines: string[] = []
  // A generous timeout: under a loaded CI machine the gateway's parse workers (tsx, from source) take seconds
  // to start, and a slow answer is not what this run is about; a stuck server is still caught (/healthz probe).
  // What the server gives back afterwards is measured by the long runs (`npm run fuzz`), not by this short one.
  const result = await runFuzz({ seed: SEED, requests: REQUESTS, concurrency: 8, timeoutMs: 45_000, settleSeconds: 0, log: (l) => lines.push(l) })
  t.comment(result.text)
  // One assertion per group of findings, each with its first example and replay line, so a failure says what to run,
  // and what the server logged (warnings and up), so a failure on a loaded CI machine says why.
  const serverLog = [...result.summary.errors].map(([msg, n]) => `${n} × ${msg}`).slice(0, 12)
  for (const { key, items } of groupFailures(result.failures)) {
    const f = items[0]!
    const replay = f.index !== undefined ? `\nreplay: npm run fuzz -- --seed ${SEED} --requests ${REQUESTS} --only ${f.index}` : ''
    t.fail(`${key} ×${items.length}`, {
      diagnostic: true,
      route: f.route,
      what: f.note,
      detail: `${f.detail.slice(0, 600)}${replay}`,
      answer: f.response?.slice(0, 600),
      serverLog,
    })
  }
  t.ok(result.ok, `no failures in ${result.summary.requests} requests (${result.summary.seconds.toFixed(1)} s)`)
})

// The run passing means nothing if the checks cannot fail: a server that breaks each rule on purpose.
t.test('the checks catch each rule a server can break', async (t) => {
  const envelope = (rid: string) => JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: 'no' }, request_id: rid })
  const server = http.createServer((req, res) => {
    const rid = 'req_1'
    const json = { 'content-type': 'application/json', 'request-id': rid }
    switch (req.url) {
      case '/ok-400':
        return res.writeHead(400, json).end(envelope(rid))
      case '/500':
        return res.writeHead(500, json).end(envelope(rid))
      case '/plain-400':
        return res.writeHead(400, { 'content-type': 'text/plain', 'request-id': rid }).end('bad')
      case '/other-rid':
        return res.writeHead(404, json).end(envelope('req_2'))
      case '/no-rid':
        return res.writeHead(404, { 'content-type': 'application/json' }).end(envelope(rid))
      case '/html-400':
        return res.writeHead(400, { 'content-type': 'text/html' }).end('<h1>Bad Request</h1>')
      case '/head-body': {
        // node:http drops a HEAD body itself: write one by hand, as a broken server would.
        const body = envelope(rid)
        return res.socket!.end(
          `HTTP/1.1 405 Method Not Allowed\r\ncontent-type: application/json\r\nrequest-id: ${rid}\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
        )
      }
      case '/hang-up':
        return req.socket.destroy()
    }
    res.writeHead(200, json).end('{}')
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => server.close())
  const port = (server.address() as AddressInfo).port
  const rules = async (path: string, method = 'GET', transport: 'uws' | 'node' = 'uws') => {
    const spec: HttpSpec = { kind: 'http', class: 'odd-method', route: path, method, target: path, headers: [], note: 'self-test' }
    const outcome = await exchange(port, frame(spec, port), { method, hangUp: false, timeoutMs: 2000, settleMs: method === 'HEAD' ? 150 : 0 })
    const v = judge(spec, outcome, transport)
    return { rules: v.problems.map((p) => p.rule), parser: v.parserAnswer }
  }
  t.same(await rules('/ok-400'), { rules: [], parser: false }, 'a 400 envelope passes')
  t.same(await rules('/fine'), { rules: [], parser: false }, 'a 200 passes')
  t.same((await rules('/500')).rules, ['5xx'], 'a 500')
  t.same((await rules('/plain-400')).rules, ['4xx without envelope'], 'a 400 that is not JSON')
  t.same((await rules('/other-rid')).rules, ['4xx without envelope'], 'request_id not the header')
  t.same((await rules('/no-rid')).rules, ['no request-id header', '4xx without envelope'], 'JSON without a request-id header')
  t.same(await rules('/html-400'), { rules: [], parser: true }, 'an HTML 400 without request-id is the parser under uWS')
  t.same((await rules('/html-400', 'GET', 'node')).rules, ['no request-id header', '4xx without envelope'], '…and a failure under node')
  t.same((await rules('/head-body', 'HEAD')).rules, ['body on HEAD'], 'a body on HEAD')
  t.same((await rules('/hang-up')).rules, ['no answer'], 'a well-formed request left unanswered')
})
