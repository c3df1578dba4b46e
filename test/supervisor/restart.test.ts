import t from 'tap'
import '../helpers/keepalive.js'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { clientFor, startTroupe } from '../helpers/troupe.js'

const dir = mkdtempSync(path.join(tmpdir(), 'troupe-data-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))

t.test('troupe start: embedded nats-server, and a restart on the same data directory sees everything', async (t) => {
  const env = { TROUPE_DATA_DIR: dir, NATS_URL: '' }
  const first = await startTroupe({ role: 'start', env })
  t.match(first.url, /^http:\/\/127\.0\.0\.1:\d+$/)
  const c1 = clientFor(first.url)
  const e = await c1.beta.environments.create({ name: 'durable', metadata: { k: 'v' } })
  await first.stop()

  const second = await startTroupe({ role: 'start', env })
  t.teardown(() => second.killNow())
  const c2 = clientFor(second.url)
  const back = await c2.beta.environments.retrieve(e.id)
  t.same(back, e)
  const list = await c2.beta.environments.list()
  t.ok(list.data.some((x) => x.id === e.id))
  await second.stop()
})

t.test('serve without NATS_URL explains itself', async (t) => {
  await t.rejects(startTroupe({ role: 'serve', env: { NATS_URL: '' } }), /needs NATS_URL/)
})

t.test('unknown arguments print usage', async (t) => {
  await t.rejects(startTroupe({ role: 'bogus' as 'serve' }), /usage: troupe/)
})
