// RecordStore (actors/kit/store.ts) on a real nats-server, as session creates use it: concurrent mutations of one
// record batched into shared writes, correct against another host writing the same key (its guess of the current
// value goes stale), refusals returned to their own caller only; and the copying cache session records use.
import t, { type Test } from 'tap'
import { connect } from '@nats-io/transport-node'
import { Kvm } from '@nats-io/kv'
import { encode } from '../../protocol/codec.js'
import { fail } from '../../protocol/errors/fail.js'
import { RecordStore } from '../../actors/kit/store.js'
import { startNats } from '../helpers/nats.js'

interface Counter {
  n: number
  closed: boolean
}

/** A KV bucket on a nats-server of the test's own. */
async function bucket(t: Test) {
  const nats = await startNats()
  t.teardown(() => nats.stopNow())
  const nc = await connect({ servers: nats.url })
  t.teardown(() => nc.close())
  return new Kvm(nc).create('records', { history: 1 })
}

t.test('mutations batch on one host and stay exact against another', async (t) => {
  const kv = await bucket(t)
  const a = new RecordStore<Counter>(kv)
  const b = new RecordStore<Counter>(kv)
  await a.create('c', { n: 0, closed: false })
  const missing = (): never => {
    throw new Error('missing')
  }
  const bump = (s: RecordStore<Counter>) =>
    s.mutate(
      'c',
      ({ value }) => {
        if (value.closed) throw fail('invalid_request', 'closed')
        return { next: { ...value, n: value.n + 1 }, result: value.n + 1 }
      },
      missing,
    )
  // A refusal in the middle of a batch: only its own caller sees it.
  const refuse = a.mutate(
    'c',
    () => {
      throw fail('invalid_request', 'not this one')
    },
    missing,
  )

  const [fromA, fromB, refused] = await Promise.all([
    Promise.all(Array.from({ length: 60 }, () => bump(a))),
    Promise.all(Array.from({ length: 40 }, () => bump(b))),
    refuse.then(
      () => 'resolved',
      (err) => err.message,
    ),
  ])
  t.equal(refused, 'not this one')
  const results = [...fromA, ...fromB].sort((x, y) => x - y)
  t.same(
    results,
    Array.from({ length: 100 }, (_, i) => i + 1),
    'every increment saw the value before it and no other',
  )
  const stored = (await b.get('c'))!
  t.equal(stored.value.n, 100)
  t.ok(stored.revision < 50, `100 changes took ${stored.revision - 1} writes: those waiting for a write share the next`)

  // b wrote last: a's guess of the value is stale, and a refusal must come from the stored value.
  await b.mutate('c', ({ value }) => ({ next: { ...value, closed: true }, result: undefined }), missing)
  const late = await bump(a).then(
    () => 'resolved',
    (err) => err.message,
  )
  t.equal(late, 'closed', 'a refusal is judged on the current record, not on what this host last wrote')
  // A change judged on a stale guess is retried on the stored value.
  await b.mutate('c', ({ value }) => ({ next: { ...value, closed: false }, result: undefined }), missing)
  t.equal(await bump(a), 101)
  t.equal(
    await a
      .mutate(
        'gone',
        () => ({ result: 1 }),
        () => {
          throw new Error('no such record')
        },
      )
      .catch((err) => err.message),
    'no such record',
  )
})

t.test('a copying cache hands every reader its own record and forgets on request', async (t) => {
  const kv = await bucket(t)
  const store = new RecordStore<Counter>(kv, () => true, true)
  const rev = await store.create('c', { n: 1, closed: false })
  const first = await store.get('c')
  first!.value.n = 99
  t.same((await store.get('c'))!.value, { n: 1, closed: false }, "a reader changing its copy changes no one else's")
  t.equal((await store.get('c'))!.revision, rev)
  // Written behind the cache's back (another owner, after a hand-over): served from memory until forgotten.
  await kv.put('c', encode({ n: 7, closed: false }))
  t.equal((await store.get('c'))!.value.n, 1)
  store.forget((k) => k === 'c')
  t.equal((await store.get('c'))!.value.n, 7, 'read again from KV once forgotten')
})

t.test('create, update and put as KV has them: absent, deleted, taken, and at a stale revision', async (t) => {
  const kv = await bucket(t)
  const s = new RecordStore<Counter>(kv)
  const first = await s.create('k', { n: 1, closed: false })
  t.ok(first, 'created when absent')
  t.equal(await s.create('k', { n: 2, closed: false }), false, 'not created when it exists')
  const second = await s.update('k', { n: 3, closed: false }, first as number)
  t.ok(second, 'updated at the revision read')
  t.equal(await s.update('k', { n: 4, closed: false }, first as number), false, 'not updated at a stale revision')
  t.ok(await s.delete('k', second as number), 'deleted at the revision read')
  const again = await s.create('k', { n: 5, closed: false })
  t.ok(again, 'created again once deleted (the write names the tombstone)')
  t.same((await new RecordStore<Counter>(kv).get('k'))?.value, { n: 5, closed: false })
  const put = await s.put('k', { n: 6, closed: true })
  t.ok(put > (again as number), 'a put writes whatever is there')
  t.same((await new RecordStore<Counter>(kv).get('k'))?.value, { n: 6, closed: true })
})
