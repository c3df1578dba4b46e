import t from 'tap'
import pino from 'pino'
import { isApiError } from '../../protocol/errors/api-error.js'
import { FenceLost, Mailbox, SERVING_WAIT_MS } from '../../actors/kit/mailbox.js'

const log = pino({ level: 'silent' })

/** A work-marker store that remembers what it holds. */
function markers() {
  const keys = new Set<string>()
  return {
    keys,
    kv: {
      put: async (k: string) => {
        keys.add(k)
        return 1
      },
      delete: async (k: string) => {
        keys.delete(k)
      },
    },
  }
}

function mailbox(onFail: (own: boolean) => void = () => undefined) {
  const m = markers()
  const mb = new Mailbox({ kind: 'counter', id: 'c1', log, work: { kv: m.kv, key: 'work.c1' }, onFail })
  return { mb, keys: m.keys }
}

t.test('writes run one at a time, in the order they were queued', async (t) => {
  const { mb } = mailbox()
  const order: string[] = []
  let running = 0
  const step = (name: string, ms: number) =>
    mb.write(async () => {
      running++
      t.equal(running, 1, `${name} runs alone`)
      await new Promise((r) => setTimeout(r, ms))
      order.push(name)
      running--
      return name
    })
  const results = await Promise.all([step('a', 20), step('b', 0), step('c', 5)])
  t.same(results, ['a', 'b', 'c'])
  t.same(order, ['a', 'b', 'c'])
})

t.test('a failing append stops the actor: later writes are refused with a retryable 503, and onFail runs once', async (t) => {
  const fails: boolean[] = []
  const { mb } = mailbox((own) => fails.push(own))
  const ran: string[] = []
  const first = mb.write(async () => {
    throw new Error('append refused: boom')
  })
  const second = mb.write(async () => {
    ran.push('second')
  })
  mb.enqueue(async () => {
    ran.push('queued')
  })
  await t.rejects(first, /boom/)
  const err = await second.then(
    () => undefined,
    (e: unknown) => e,
  )
  t.ok(isApiError(err) && err.status === 503 && err.retryAfterMs === 500, 'the write behind the failure answers 503 with a retry hint')
  await mb.settled()
  t.same(ran, [], 'nothing queued behind the failure ran')
  t.ok(mb.dead)
  t.same(fails, [true], "an unexpected error is the actor's own failure, reported once")
  t.throws(() => mb.alive(), /moving to another host/)
})

t.test('a lost fence steps the actor down: not its own failure', async (t) => {
  const fails: boolean[] = []
  const { mb } = mailbox((own) => fails.push(own))
  await t.rejects(
    mb.write(async () => {
      throw new FenceLost('another writer')
    }),
  )
  await mb.settled()
  t.same(fails, [false])
})

t.test('the record is written after the writes it sums up, and a failed record write stops the actor', async (t) => {
  const fails: boolean[] = []
  const { mb } = mailbox((own) => fails.push(own))
  const order: string[] = []
  void mb.write(async () => {
    await new Promise((r) => setTimeout(r, 10))
    order.push('append')
  })
  await mb.persist(async () => {
    order.push('record')
    throw new Error('record write failed')
  })
  t.same(order, ['append', 'record'])
  t.same(fails, [true])
  t.ok(mb.dead)
  await mb.persist(async () => {
    order.push('not after stop')
  })
  t.same(order, ['append', 'record'], 'a stopped actor writes no record')
})

t.test('the work marker is written once and cleared when the work is done', async (t) => {
  const { mb, keys } = mailbox()
  await mb.markWork()
  await mb.markWork()
  t.same([...keys], ['work.c1'])
  await mb.unmarkWork()
  t.same([...keys], [])
  keys.add('work.c1')
  await mb.unmarkWork()
  t.same([...keys], ['work.c1'], 'an unmarked actor does not clear a marker it did not set')
  await mb.unmarkWork(true)
  t.same([...keys], [], 'unless forced (delete)')
})

t.test('stop() ends the actor without counting a failure', async (t) => {
  const fails: boolean[] = []
  const { mb } = mailbox((own) => fails.push(own))
  mb.stop()
  await t.rejects(
    mb.write(async () => 1),
    /moving to another host/,
  )
  await mb.settled()
  t.same(fails, [])
})

t.test('a host that may no longer serve writes nothing: the actor steps down', async (t) => {
  const fails: boolean[] = []
  let serving = true
  const mb = new Mailbox({
    kind: 'counter',
    id: 'c1',
    log,
    work: { kv: markers().kv, key: 'work.c1' },
    serves: () => serving,
    onFail: (own) => fails.push(own),
  })
  t.equal(await mb.write(async () => 1), 1)
  serving = false
  let wrote = false
  await t.rejects(
    mb.write(async () => {
      wrote = true
    }),
    /heartbeat lapsed/,
  )
  t.notOk(wrote)
  t.same(fails, [false], "stepping down is not the actor's own failure")
})

t.test('a lapsed heartbeat is waited out: the write goes on if the host claims the partition back, else it steps down', async (t) => {
  const fails: boolean[] = []
  let serving = false
  let settle!: (kept: boolean) => void
  const asked: number[] = []
  const mb = new Mailbox({
    kind: 'counter',
    id: 'c1',
    log,
    work: { kv: markers().kv, key: 'work.c1' },
    serves: () => serving,
    whenServing: (ms) => {
      asked.push(ms)
      return new Promise<boolean>((r) => {
        settle = (kept) => {
          serving = kept
          r(kept)
        }
      })
    },
    onFail: (own) => fails.push(own),
  })
  // Kept: the write waits, then runs.
  let wrote = 0
  const first = mb.write(async () => ++wrote)
  await new Promise((r) => setImmediate(r))
  t.equal(wrote, 0, 'nothing written while the host does not know')
  settle(true)
  t.equal(await first, 1, 'written once the partition is claimed back')
  t.same(asked, [SERVING_WAIT_MS], 'waited at most SERVING_WAIT_MS')
  // Lost: it steps down without writing.
  serving = false
  const second = mb.write(async () => ++wrote)
  await new Promise((r) => setImmediate(r))
  settle(false)
  await t.rejects(second, /heartbeat lapsed/)
  t.equal(wrote, 1, 'nothing written for a partition given up')
  t.same(fails, [false], "stepping down is not the actor's own failure")
})
