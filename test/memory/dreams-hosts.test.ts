import { mkdtempSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Kvm } from '@nats-io/kv'
import { connect } from '@nats-io/transport-node'
import t from 'tap'
import { decode } from '../../protocol/codec.js'
import { Buckets, partitionOf, partitionToken } from '../../protocol/subjects.js'
import { startFakeModelServer } from '../fakes/model-server.js'
import '../helpers/keepalive.js'
import { startNats } from '../helpers/nats.js'
import { isolatedOrSkip } from '../helpers/sandbox-backend.js'
import { clientFor, startTroupe, type TroupeProcess } from '../helpers/troupe.js'
import { until } from '../helpers/wait.js'

/**
 * Dreams on two hosts sharing one NATS (issue 42 point 5): `update_existing` dreams created at once through both hosts
 * on one store, of which exactly one holds it; and a dream whose owner is SIGKILLed mid-run, carried on by the other
 * host to its end, its store let go.
 */

const isolated = isolatedOrSkip()
const nats = await startNats()
const model = await startFakeModelServer()
const hosts: TroupeProcess[] = []
t.teardown(async () => {
  for (const h of hosts) h.killNow()
  await model.close()
  nats.stopNow()
})
for (let i = 0; i < 2; i++) {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'troupe-dreams-'))
  hosts.push(
    await startTroupe({
      natsUrl: nats.url,
      env: { TROUPE_DATA_DIR: dataDir, TROUPE_MODEL_BASE_URL: model.url, ANTHROPIC_API_KEY: 'k', TROUPE_MODEL_RETRY_BASE_MS: '20' },
    }),
  )
}
const clients = hosts.map((h) => clientFor(h.url, { maxRetries: 6 }))
const nc = await connect({ servers: nats.url })
t.teardown(() => nc.close())
const kvm = new Kvm(nc)

/** How the dreams' model requests are answered (other requests get the fallback). */
let dreamReply: () => any = () => ({ hang: true })
model.setHandler((req) => (String(req.body?.system ?? '').includes('You are dreaming') ? dreamReply() : undefined))

await until(
  'both hosts serve',
  async () =>
    (
      await Promise.all(
        clients.map((c) =>
          c.beta.dreams.list().then(
            () => true,
            () => false,
          ),
        ),
      )
    ).every(Boolean),
  60_000,
)

/** The dream holding `store` now, as the store's record says. */
async function holder(store: string): Promise<string | undefined> {
  const kv = await kvm.open(Buckets.memoryStores)
  const e = await kv.get(`memory_store.${store}`)
  return e?.value.length ? decode<{ dream?: { id: string } }>(e.value).dream?.id : undefined
}

const updating = (store: string) => ({
  inputs: [{ type: 'memory_store' as const, memory_store_id: store }],
  model: 'claude-sonnet-4-5',
  output_behavior: { type: 'update_existing' as const, memory_store_id: store },
})

t.test('update_existing dreams from two hosts at once: exactly one holds the store', isolated, async (t) => {
  dreamReply = () => ({ hang: true })
  const store = (await clients[0]!.beta.memoryStores.create({ name: 'contested' })).id
  for (let round = 0; round < 3; round++) {
    const results = await Promise.all(
      [0, 1, 0, 1].map((h) =>
        clients[h]!.beta.dreams.create(updating(store)).then(
          (d) => d,
          (e: any) => e?.error?.error?.type ?? `${e?.status} ${e?.message}`,
        ),
      ),
    )
    const won = results.filter((r): r is any => typeof r === 'object')
    t.equal(won.length, 1, `round ${round}: one dream holds it (${results.map((r) => (typeof r === 'object' ? 'won' : r)).join(', ')})`)
    t.ok(
      results.every((r) => typeof r === 'object' || r === 'conflict_error'),
      'the others are 409 conflict_error',
    )
    t.equal(await holder(store), won[0].id, "the store's record names the winner")
    await clients[round % 2]!.beta.dreams.cancel(won[0].id)
    await until(`round ${round}: the store let go`, async () => (await holder(store)) === undefined, 60_000, 100)
  }
})

t.test("a dream's owner SIGKILLed mid-run: the other host carries it to its end and lets the store go", isolated, async (t) => {
  // The first request of a dream's session takes 3 s (the kill lands meanwhile); a request sent again answers at once.
  let served = 0
  dreamReply = () => (served++ === 0 ? { delayMs: 3000, steps: [{ type: 'text', text: 'slow' }] } : { steps: [{ type: 'text', text: 'done' }] })
  const store = (await clients[0]!.beta.memoryStores.create({ name: 'survivor' })).id
  const dream = await clients[0]!.beta.dreams.create(updating(store))
  const placement = await kvm.open(Buckets.placement)
  const owner = decode<{ host: string }>((await placement.get(`dream.${partitionToken(partitionOf(dream.id))}`))!.value).host
  const dying = hosts.findIndex((h) => h.stdout().includes(owner))
  t.ok(dying >= 0, `the owner ${owner} is one of the two hosts`)
  const survivor = clients[1 - dying]!
  await until(
    'the dream is running its session',
    async () => ((d) => d.status === 'running' && d.session_id && d)(await survivor.beta.dreams.retrieve(dream.id)),
    60_000,
    100,
  )
  await until('its model request', () => served > 0, 30_000)
  await hosts[dying]!.kill()

  const ended = await until(
    'the dream ends on the other host',
    async () => ((d) => ['completed', 'failed', 'canceled'].includes(d.status) && d)(await survivor.beta.dreams.retrieve(dream.id)),
    120_000,
    250,
  )
  t.equal(ended.status, 'completed', JSON.stringify(ended.error))
  t.same(ended.outputs, [{ type: 'memory_store', memory_store_id: store }])
  await until('the store let go', async () => (await holder(store)) === undefined, 30_000, 100)
  t.pass('no hold outlives the dream')
})
