import t from 'tap'
import '../helpers/keepalive.js'
import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { clientFor, groupAlive, raw } from '../helpers/troupe.js'
import { scratch } from '../helpers/scratch.js'
import { startNats } from '../helpers/nats.js'
import { until } from '../helpers/wait.js'
import { pauseGroup } from '../helpers/procs.js'

// Eight embedded or joined starts: on a loaded machine the file has run past tap's default 120 s (timeout, not a failure).
t.setTimeout(300_000)

const files = scratch('troupe-life-')
const dataDir = files.dataDir
const start = (env: Record<string, string>, role: 'start' | 'serve' = 'start') => files.start({ role, env: role === 'start' ? { NATS_URL: '', ...env } : env })
const lockOf = (dir: string) => JSON.parse(readFileSync(path.join(dir, 'troupe.lock'), 'utf8'))

/** `troupe start` on a data directory of its own. */
const fresh = async () => {
  const dir = dataDir()
  return { dir, p: await start({ TROUPE_DATA_DIR: dir }) }
}
/** The first test's server, left running for the Ctrl-C test after it (one start fewer). */
let first: Awaited<ReturnType<typeof fresh>> | undefined

t.test('one data directory, one server: a second start refuses at once, naming the holder', async (t) => {
  first = await fresh()
  const { dir, p } = first
  // A start that waited for the lock instead would fail differently: "did not start in time" (test/helpers/troupe.ts).
  const err = await start({ TROUPE_DATA_DIR: dir }).then(
    () => undefined,
    (e: Error) => e,
  )
  t.ok(err, 'the second start fails')
  t.match(err!.message, new RegExp(`in use by troupe start \\(pid ${p.proc.pid}`))
  // The first is untouched.
  const c = clientFor(p.url)
  const env = await c.beta.environments.create({ name: 'still-fine' })
  t.equal((await c.beta.environments.retrieve(env.id)).id, env.id)
})

t.test('Ctrl-C: stops, saying so; the embedded server stops last; the lock is released', async (t) => {
  // The first test's server, when it ran: the same start on a data directory of its own.
  const { dir, p } = first ?? (await fresh())
  first = undefined
  const { nats_pgid } = lockOf(dir)
  let out = ''
  p.proc.stdout!.on('data', (d) => (out += d))
  const exited = new Promise<number | null>((r) => p.proc.once('exit', (code) => r(code)))
  p.proc.ref()
  p.proc.kill('SIGINT')
  // How long the stop takes is `npm run bench -- stops`'s figure; here, that it ends cleanly.
  const code = await exited
  t.equal(code, 0)
  t.match(out, /troupe start stopped in \d+ ms/)
  t.notOk(groupAlive(nats_pgid), 'nats-server stopped')
  t.notOk(existsSync(path.join(dir, 'troupe.lock')), 'lock released')
  t.notMatch(p.logs(), /"level":50/, 'no errors logged while stopping')
})

t.test('restart at once after SIGKILL: the lock is taken over once the old nats-server is gone, ready means serving', async (t) => {
  const dir = dataDir()
  const first = await start({ TROUPE_DATA_DIR: dir })
  const c1 = clientFor(first.url)
  const agents = []
  for (let i = 0; i < 24; i++) agents.push(await c1.beta.agents.create({ name: `a${i}`, model: 'claude-sonnet-4-5' }))
  const { nats_pgid } = lockOf(dir)
  t.ok(nats_pgid > 0, 'the lock names the embedded nats-server')
  await first.kill()
  const second = await start({ TROUPE_DATA_DIR: dir })
  // The old server holds the lock with its parent: the second start waited for it to be gone.
  t.notOk(groupAlive(nats_pgid), 'the old nats-server stopped before the store was reused')
  // Ready as soon as it says so, and then every partition answers (it took back what it held before).
  await until('ready', async () => (await raw(second.url, 'GET', '/readyz')).status === 200, 10_000)
  const c2 = clientFor(second.url)
  const got = await Promise.all(
    agents.map((a) =>
      c2.beta.agents.retrieve(a.id).then(
        (x) => x.id,
        (e) => `error ${e.status}`,
      ),
    ),
  )
  t.same(
    got,
    agents.map((a) => a.id),
    'every agent answers on the first try',
  )
  await second.stop()
})

t.test('start-up says where everything is', async (t) => {
  const dir = dataDir()
  const p = await start({ TROUPE_DATA_DIR: dir, TROUPE_MODEL_BASE_URL: 'http://127.0.0.1:9/model' })
  await until('banner', () => /version/.test(p.stdout()), 5000)
  const banner = p.stdout()
  t.match(banner, new RegExp(`HTTP +${p.url.replace(/[.]/g, '\\.')}`))
  t.match(banner, /NATS +nats:\/\/127\.0\.0\.1:\d+ \(embedded; monitoring http:\/\/127\.0\.0\.1:\d+\)/)
  t.match(banner, new RegExp(`data +${dir}`))
  t.match(banner, /model +http:\/\/127\.0\.0\.1:9\/model/)
  t.match(banner, /strict +off/)
  t.match(banner, /version +\d+\.\d+\.\d+/)
  const monitor = /monitoring (http:\/\/\S+)\)/.exec(banner)![1]
  t.equal((await fetch(`${monitor}/varz`)).status, 200, 'the monitoring port answers on loopback')
  await p.stop()
})

t.test('readiness: 503 while the store does not answer, 200 again once it does', async (t) => {
  const nats = await startNats()
  t.teardown(() => nats.stopNow())
  const p = await start({ NATS_URL: nats.url }, 'serve')
  await until('ready', async () => (await raw(p.url, 'GET', '/readyz')).status === 200, 10_000)
  await pauseGroup(nats.pgid)
  try {
    // What is promised is 503 while it stays paused (its threads all stopped: procs.ts#pauseGroup).
    const r = await until(
      'not ready while nats-server is paused',
      async () => {
        const r = await raw(p.url, 'GET', '/readyz')
        return r.status === 503 ? r : undefined
      },
      15_000,
      100,
    )
    t.equal(r.json.checks.jetstream, false)
  } finally {
    process.kill(-nats.pgid, 'SIGCONT')
  }
  await until('ready again', async () => (await raw(p.url, 'GET', '/readyz')).status === 200, 10_000)
  t.pass('ready again')
})

t.test('SIGTERM of one of two hosts hands its partitions to the other at once', async (t) => {
  const nats = await startNats()
  t.teardown(() => nats.stopNow())
  const a = await start({ NATS_URL: nats.url }, 'serve')
  const b = await start({ NATS_URL: nats.url }, 'serve')
  await until('both ready', async () => (await raw(b.url, 'GET', '/readyz')).status === 200, 10_000)
  const cb = clientFor(b.url)
  const agents = []
  for (let i = 0; i < 16; i++) agents.push(await cb.beta.agents.create({ name: `a${i}`, model: 'claude-sonnet-4-5' }))
  // Let placement settle (a joined second; partitions move to it).
  await until('a serves some partitions', () => /partitions changed/.test(a.logs()), 10_000)
  // The time this takes is `npm run bench -- stops`'s figure; here, that nothing is lost or refused meanwhile.
  await a.stop()
  const got = await Promise.all(
    agents.map((x) =>
      cb.beta.agents.retrieve(x.id).then(
        (r) => r.id,
        (e) => `error ${e.status}`,
      ),
    ),
  )
  t.same(
    got,
    agents.map((x) => x.id),
    'every agent answers at once on the survivor, no 503 while waiting for a TTL',
  )
  t.equal((await raw(b.url, 'GET', '/readyz')).status, 200)
})
