import t from 'tap'
import '../helpers/keepalive.js'
import { createServer } from 'node:net'
import type { TroupeProcess } from '../helpers/troupe.js'
import { scratch } from '../helpers/scratch.js'
import { until } from '../helpers/wait.js'

// The embedded nats-server's port: the one TROUPE_NATS_PORT gives, or the one of the last run on the data directory
// while it is free, so that what joined it finds it again after a restart.

const files = scratch('troupe-port-')
const dataDir = files.dataDir
const run = async (env: Record<string, string>) => {
  const p = await files.start({ role: 'start', env: { NATS_URL: '', TROUPE_NATS_PORT: '', ...env } })
  await until('the start-up block', () => /^ {2}version /m.test(p.stdout()), 5000)
  return p
}
const natsPortOf = (p: TroupeProcess) => Number(/^ {2}NATS +nats:\/\/127\.0\.0\.1:(\d+) \(embedded/m.exec(p.stdout())![1])

t.test('without TROUPE_NATS_PORT the port is kept across restarts while free, and a taken one is replaced, saying so', async (t) => {
  const dir = dataDir()
  const start = () => run({ TROUPE_DATA_DIR: dir })
  const first = await start()
  const port = natsPortOf(first)
  t.match(first.stdout(), /^ {2}scale +.*\(port kept across restarts while free; TROUPE_NATS_PORT fixes it/m)
  await first.stop()
  const second = await start()
  t.equal(natsPortOf(second), port, 'the same port')
  await second.stop()

  const squatter = createServer()
  await new Promise<void>((r) => squatter.listen(port, '127.0.0.1', r))
  t.teardown(() => squatter.close())
  const third = await start()
  t.not(natsPortOf(third), port, 'another port')
  const moved = new RegExp(`port of the last run, ${port}, is in use: it listens on ${natsPortOf(third)} now`)
  await until('the warning logged', () => moved.test(third.logs()))
  await third.stop()
})

t.test('TROUPE_NATS_PORT in use stops start-up, naming the port', async (t) => {
  const squatter = createServer()
  const port = await new Promise<number>((r) => squatter.listen(0, '127.0.0.1', () => r((squatter.address() as { port: number }).port)))
  t.teardown(() => squatter.close())
  const err = await run({ TROUPE_NATS_PORT: String(port), TROUPE_DATA_DIR: dataDir() }).then(
    () => undefined,
    (e: Error) => e,
  )
  t.match(err?.message, new RegExp(`TROUPE_NATS_PORT=${port}: port ${port} on 127\\.0\\.0\\.1 is in use`))
})
