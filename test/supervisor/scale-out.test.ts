import t from 'tap'
import '../helpers/keepalive.js'
import { freePort } from '../../supervisor/nats-server.js'
import { clientFor, logLines, raw, type TroupeProcess } from '../helpers/troupe.js'
import { scratch } from '../helpers/scratch.js'
import { until } from '../helpers/wait.js'

// Scaling out from `npm start`: a `troupe serve` joined to the embedded NATS finds it again after a restart (fixed
// or kept port), and while it is gone the serve says so once, reports it on /readyz, and still stops at once.

const files = scratch('troupe-scale-')
const dataDir = files.dataDir
const run = async (role: 'start' | 'serve', env: Record<string, string>) => {
  const p = await files.start({ role, env: { TROUPE_NATS_PORT: '', ...env } })
  await until('the start-up block', () => /^ {2}version /m.test(p.stdout()), 5000)
  return p
}
const natsPortOf = (p: TroupeProcess) => Number(/^ {2}NATS +nats:\/\/127\.0\.0\.1:(\d+) \(embedded/m.exec(p.stdout())![1])
const readyz = async (p: TroupeProcess) => (await raw(p.url, 'GET', '/readyz')).json

t.test('TROUPE_NATS_PORT: a joined serve outlives a restart of npm start, and says once that NATS is gone', async (t) => {
  const port = await freePort()
  const dir = dataDir()
  const start = () => run('start', { NATS_URL: '', TROUPE_NATS_PORT: String(port), TROUPE_DATA_DIR: dir })
  const first = await start()
  t.equal(natsPortOf(first), port, 'the embedded server listens on the port given')
  t.match(first.stdout(), new RegExp(`^ {2}scale +NATS_URL=nats://127\\.0\\.0\\.1:${port} .*npx troupe serve \\(port set by TROUPE_NATS_PORT`, 'm'))
  const serve = await run('serve', { NATS_URL: `nats://127.0.0.1:${port}` })
  await until('the serve is ready', async () => (await readyz(serve)).status === 'ready', 15_000)
  const client = clientFor(serve.url)
  const before = await client.beta.agents.create({ name: 'before', model: 'claude-sonnet-4-5' })

  await first.stop()
  const gone = await until('the serve reports NATS gone', async () => {
    const r = await readyz(serve)
    return r.checks.nats === false && r
  })
  t.equal(gone.status, 'unavailable')
  // Long enough for the heartbeat, which waits 5 s for each acknowledgement, to fail three times over.
  await new Promise((r) => setTimeout(r, 12_000))
  const lines = logLines(serve)
  const lostAt = lines.findIndex((l) => /^lost the connection to NATS at 127\.0\.0\.1:\d+/.test(String(l.msg)))
  t.ok(lostAt >= 0, 'one line says the connection is lost')
  const after = lines.slice(lostAt)
  t.equal(after.filter((l) => /lost the connection/.test(String(l.msg))).length, 1, 'said once')
  t.notOk(
    after.some((l) => (l.err as { stack?: string } | undefined)?.stack),
    'no stack traces',
  )
  const repeats = after.filter((l) => l.level === 40).map((l) => l.msg)
  t.same(repeats, [...new Set(repeats)], `no warning repeats while NATS is gone: ${JSON.stringify(repeats)}`)

  const second = await start()
  t.equal(natsPortOf(second), port, 'the same port after the restart')
  await until('the serve is ready again', async () => (await readyz(serve)).status === 'ready', 30_000)
  await until('the reconnection logged', () => /"msg":"reconnected to NATS at 127\.0\.0\.1:\d+"/.test(serve.logs()))
  t.equal((await client.beta.agents.retrieve(before.id)).id, before.id, 'what was stored before is served')
  t.match((await client.beta.agents.create({ name: 'after', model: 'claude-sonnet-4-5' })).id, /^agent_/, 'and new writes land')

  // NATS gone again: Ctrl-C still stops the serve within its 3 s, cleanly.
  await second.stop()
  await until('the serve reports NATS gone', async () => (await readyz(serve)).checks.nats === false)
  const exited = new Promise<number | null>((r) => serve.proc.once('exit', (code) => r(code)))
  serve.proc.ref()
  const t0 = Date.now()
  serve.proc.kill('SIGINT')
  const code = await exited
  const took = Date.now() - t0
  t.equal(code, 0)
  t.ok(took < 3000, `exited in ${took} ms`)
  t.match(serve.stdout(), /troupe serve stopped in \d+ ms/)
})
