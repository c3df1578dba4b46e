import Anthropic from '@anthropic-ai/sdk'
import t from 'tap'
import '../helpers/keepalive.js'
import { startNats } from '../helpers/nats.js'
import { clientFor, raw, startTroupe } from '../helpers/troupe.js'
import { until } from '../helpers/wait.js'
import { keyringFile, newKey } from '../vaults/_helpers.js'
import { startReceiver } from '../webhooks/_helpers.js'

/** `memory_store.created`, `.archived` and `.deleted`, each delivered once at its moment, signed (issue 42 point 6). */
const receiver = await startReceiver()
const nats = await startNats()
const troupe = await startTroupe({
  role: 'start',
  natsUrl: nats.url,
  env: { TROUPE_VAULT_KEYRING_FILE: keyringFile([{ id: 'k1', key: newKey() }]), ...receiver.env },
})
t.teardown(() => {
  troupe.killNow()
  nats.stopNow()
  receiver.close()
})
const stores = clientFor(troupe.url, { maxRetries: 3 }).beta.memoryStores

t.test('a store created, updated, archived; another deleted; memories written: three events, one each', async (t) => {
  const types = ['memory_store.created', 'memory_store.archived', 'memory_store.deleted']
  const r = await raw(troupe.url, 'POST', '/v1/webhooks', { url: 'https://hooks.example.test/memory', event_types: types })
  t.equal(r.status, 200, r.text.slice(0, 200))
  const verifier = new Anthropic({ apiKey: 'x', webhookKey: r.json.signing_secret }) as any

  const kept = await stores.create({ name: 'kept' })
  await stores.update(kept.id, { description: 'changed' })
  const m = await stores.memories.create(kept.id, { path: '/a', content: 'x' })
  await stores.memories.update(m.id, { memory_store_id: kept.id, content: 'y' })
  await stores.archive(kept.id)
  await stores.archive(kept.id)
  const gone = await stores.create({ name: 'gone' })
  await stores.delete(gone.id)

  const events = () => receiver.got.filter((g) => g.path === '/memory').map((g) => verifier.beta.webhooks.unwrap(g.body, { headers: g.headers }))
  const want: Array<[string, string]> = [
    ['memory_store.created', kept.id],
    ['memory_store.archived', kept.id],
    ['memory_store.created', gone.id],
    ['memory_store.deleted', gone.id],
  ]
  const has = (type: string, id: string) => events().filter((e: any) => e.data.type === type && e.data.id === id).length
  await until('every event delivered', () => want.every(([type, id]) => has(type, id) > 0), 60_000, 200).catch(() => undefined)
  for (const [type, id] of want) t.equal(has(type, id), 1, `${type} of ${id}, once`)
  t.equal(events().length, want.length, 'nothing else: updates and memories make no store event')
  const created = events().find((e: any) => e.data.id === kept.id && e.data.type === 'memory_store.created')
  t.ok(Math.abs(Date.parse(created.created_at) - Date.parse(kept.created_at)) < 5000, "made at the change's stored time")
})
