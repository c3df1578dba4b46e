import t from 'tap'
import pino from 'pino'
import { type } from 'arktype'
import { connect } from '@nats-io/transport-node'
import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { Kvm } from '@nats-io/kv'
import { decode, encode } from '../../protocol/codec.js'
import { isApiError } from '../../protocol/errors/api-error.js'
import { fail } from '../../protocol/errors/fail.js'
import { defineKind, returns } from '../../protocol/ops/define.js'
import { partitionOf } from '../../protocol/subjects.js'
import { durableState, type Self } from '../../actors/kit/durable-state.js'
import { FencedRecord } from '../../actors/kit/fenced-record.js'
import { FenceLost } from '../../actors/kit/mailbox.js'
import { implement } from '../../actors/kit/ops.js'
import { RecordStore } from '../../actors/kit/store.js'
import type { HostContext } from '../../actors/kit/types.js'
import { startNats } from '../helpers/nats.js'
import { until } from '../helpers/wait.js'

// The durable-state piece on a real nats-server, driven straight through its handlers: two "hosts" are two
// DurableStates on one bucket, each told by the test which partitions it serves.

const nats = await startNats()
t.teardown(() => nats.stopNow())
const nc = await connect({ servers: nats.url })
t.teardown(() => nc.close())
const js = jetstream(nc)
const jsm = await jetstreamManager(nc)
const kvm = new Kvm(js)
const log = pino({ level: process.env.TROUPE_TEST_LOG ?? 'silent' }, pino.destination(2))

const View = returns<{ n: number; todo: number; done: number; activation: number; host: string; why?: string }>()
const JobKind = defineKind(
  'job',
  { param: 'job_id', prefix: 'job', noun: 'Job' },
  {
    add: { placement: 'owner', body: type({ by: 'number' }), reply: View },
    get: { placement: 'owner', reply: View },
    refuse: { placement: 'owner', reply: View },
    corrupt: { placement: 'owner', reply: View },
    start: { placement: 'owner', body: type({ steps: 'number' }), reply: View },
    remove: { placement: 'owner', reply: View },
  },
)

interface Job {
  n: number
  todo: number
  done: number
  /** Which host ran each step. */
  by: string[]
  why?: string
}

/** A gate per host that steps and adds wait at while it is shut. */
class Gate {
  private opened: Promise<void> = Promise.resolve()
  private release: () => void = () => undefined
  shut() {
    this.opened = new Promise((r) => (this.release = r))
  }
  open() {
    this.release()
  }
  pass() {
    return this.opened
  }
}

let bucket = 0

/** A host of the job kind on a fresh bucket (or `on` another host's bucket). */
async function host(name: string, opts: { on?: string; idleMs?: number; failSteps?: boolean; maxRebuilds?: number } = {}) {
  const serving = new Set<number>()
  const gate = new Gate()
  const ctx = {
    nc,
    js,
    jsm,
    kvm,
    storage: { jsm, replicas: 1, log },
    log,
    hostId: name,
    settings: { dataDir: '' },
    serves: (_kind: string, p: number) => serving.has(p),
    whenServing: async (_kind: string, p: number) => serving.has(p),
  } as unknown as HostContext
  const bucketName = opts.on ?? `troupe_test_jobs_${++bucket}`
  const view = (s: Job, self: Self) => ({ n: s.n, todo: s.todo, done: s.done, activation: self.activation, host: self.host, ...(s.why ? { why: s.why } : {}) })
  const jobs = await durableState(ctx, {
    contract: JobKind,
    bucket: bucketName,
    initial: (): Job => ({ n: 0, todo: 0, done: 0, by: [] }),
    idleMs: opts.idleMs,
    maxRebuilds: opts.maxRebuilds,
    work: {
      pending: (s) => s.todo > 0,
      step: async (s, self) => {
        await gate.pass()
        if (opts.failSteps) throw new Error('step failed')
        return { ...s, todo: s.todo - 1, done: s.done + 1, by: [...s.by, self.host] }
      },
      abandon: (s, why) => ({ ...s, todo: 0, why }),
    },
  })
  const ops = jobs.ops({
    add: async (s, { body }, self) => {
      await gate.pass()
      const next = { ...s, n: s.n + body.by }
      return { state: next, reply: view(next, self) }
    },
    get: { shared: (s, _input, self) => view(s, self) },
    refuse: () => {
      throw fail('invalid_request', 'refused')
    },
    corrupt: (s) => {
      s.n = -1
      throw new Error('a bug')
    },
    start: (s, { body }, self) => {
      const next = { ...s, todo: s.todo + body.steps }
      return { state: next, reply: view(next, self) }
    },
    remove: (s, _input, self) => ({ delete: true, reply: view(s, self) }),
  })
  const rt = jobs.runtime(implement(JobKind, ops))
  t.teardown(() => rt.close())
  const input = (id: string, body?: unknown) => ({ id, body, query: undefined, rid: 'req_test' }) as never
  return {
    gate,
    kv: jobs.kv,
    bucket: bucketName,
    /** This host serves the partition of `id` from now. */
    async take(id: string) {
      serving.add(partitionOf(id))
      await rt.acquired!(partitionOf(id))
    },
    /** Its heartbeat lapsed: it may not serve or write the partition of `id`, though it still holds it. */
    lapse(id: string) {
      serving.delete(partitionOf(id))
    },
    async give(id: string) {
      serving.delete(partitionOf(id))
      await rt.released!(partitionOf(id), false)
    },
    add: (id: string, by = 1) => ops.add(input(id, { by })),
    get: (id: string) => ops.get(input(id)),
    refuse: (id: string) => ops.refuse(input(id)),
    corrupt: (id: string) => ops.corrupt(input(id)),
    start: (id: string, steps: number) => ops.start(input(id, { steps })),
    remove: (id: string) => ops.remove(input(id)),
  }
}

const caught = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  )
const moving = (err: unknown) => isApiError(err) && err.status === 503 && /moving to another host/.test(err.message)

t.test('a lost fence steps the actor down: the caller may retry, and it is rebuilt from what the other writer stored', async (t) => {
  const a = await host('host_a')
  await a.take('job_1')
  const first = await a.add('job_1', 1)
  t.equal(first.n, 1)
  // Another writer (a host that took the partition while this one did not notice) stores its own value.
  await a.kv.put('job.job_1', encode({ n: 10, todo: 0, done: 0, by: [] }))
  t.ok(moving(await caught(a.add('job_1', 1))), 'the write is fenced off: a retryable 503')
  const after = await until('rebuilt', async () => {
    const v = await a.get('job_1')
    return v.activation !== first.activation && v
  })
  t.equal(after.n, 10, "the rebuilt actor has the other writer's value")
  t.equal((await a.add('job_1', 1)).n, 11, 'and goes on from it')
})

t.test('a lapsed heartbeat writes nothing: the actor steps down until the partition is served again', async (t) => {
  const a = await host('host_a')
  await a.take('job_2')
  t.equal((await a.add('job_2', 1)).n, 1)
  a.lapse('job_2')
  t.ok(moving(await caught(a.add('job_2', 1))), 'refused with a retryable 503')
  await a.take('job_2')
  t.equal((await a.add('job_2', 1)).n, 2, 'nothing was written meanwhile')
})

t.test('a refusal leaves the actor as it is; a failure rebuilds it from what was stored', async (t) => {
  const a = await host('host_a')
  await a.take('job_3')
  const first = await a.add('job_3', 5)
  const refused = await caught(a.refuse('job_3'))
  t.ok(isApiError(refused) && refused.status === 400, 'an ApiError is the answer')
  t.equal((await a.get('job_3')).activation, first.activation, 'same activation')
  await t.rejects(a.corrupt('job_3'), /a bug/, 'a bug is thrown to the caller')
  const after = await until('rebuilt', async () => {
    const v = await a.get('job_3')
    return v.activation !== first.activation && v
  })
  t.equal(after.n, 5, 'the state it changed in place before failing is gone: rebuilt from the record')
})

t.test('an op that deletes: the record goes (fenced), and the actor with it', async (t) => {
  const a = await host('host_a')
  await a.take('job_del')
  const first = await a.add('job_del', 3)
  t.equal((await a.remove('job_del')).n, 3, 'the reply is the last state')
  t.equal((await a.kv.get('job.job_del'))?.operation, 'DEL', 'the record is deleted')
  const after = await a.get('job_del')
  t.not(after.activation, first.activation, 'a new activation')
  t.equal(after.n, 0, 'which finds no record (the initial state)')
  // A delete fenced off: another writer stored the record since this actor last did.
  await a.add('job_del', 1)
  await a.kv.put('job.job_del', encode({ n: 10, todo: 0, done: 0, by: [] }))
  t.ok(moving(await caught(a.remove('job_del'))), 'a retryable 503')
  t.equal(decode<Job>((await a.kv.get('job.job_del'))!.value).n, 10, "the other writer's record stays")
})

t.test('passivation waits for the writes in flight', async (t) => {
  const a = await host('host_a', { idleMs: 100 })
  await a.take('job_4')
  await a.take('job_5')
  const idle = await a.get('job_5')
  const first = await a.add('job_4', 1)
  a.gate.shut()
  const slow = a.add('job_4', 1)
  const queued = a.add('job_4', 1)
  // The idle actor beside it leaving memory (a new activation answers it) shows the sweep ran meanwhile.
  let seen = idle.activation
  await until(
    'an idle actor passivated',
    async () => {
      const v = await a.get('job_5')
      const passivated = v.activation !== seen
      seen = v.activation
      return passivated
    },
    30_000,
    300,
  )
  a.gate.open()
  const [s, q] = await Promise.all([slow, queued])
  t.same([s.n, q.n], [2, 3], 'both writes landed, in order')
  t.equal(q.activation, first.activation, 'on the activation they were sent to')
  t.equal((await a.get('job_4')).activation, first.activation, 'which is still in memory')
  const later = await until(
    'passivated once idle',
    async () => {
      const v = await a.get('job_4')
      return v.activation !== first.activation && v
    },
    30_000,
    300,
  )
  t.equal(later.n, 3, 'loaded again with what was stored')
})

t.test('work outlasting a request: a takeover resumes a marked actor where its owner left it', async (t) => {
  const a = await host('host_a')
  const b = await host('host_b', { on: a.bucket })
  await a.take('job_6')
  a.gate.shut()
  const started = await a.start('job_6', 3)
  t.equal(started.todo, 3)
  t.ok(await until('the marker is down', async () => (await a.kv.get('work.job_6'))?.operation === 'PUT'))
  // Host a stops being heard (its first step is stuck), and host b takes the partition over.
  a.lapse('job_6')
  await b.take('job_6')
  const done = await until('resumed and done on b', async () => {
    const v = await b.get('job_6')
    return v.done === 3 && v
  })
  t.equal(done.todo, 0)
  t.equal(done.host, 'host_b')
  await until('the marker is cleared', async () => (await a.kv.get('work.job_6'))?.operation !== 'PUT')
  a.gate.open()
  await a.give('job_6')
  const stored = decode<{ done: number; by: string[] }>((await a.kv.get('job.job_6'))!.value)
  t.same(stored.by, ['host_b', 'host_b', 'host_b'], "every step stored is b's: a's late step wrote nothing")
})

t.test('a marker left with nothing to do (its host died after the work was done) is cleared on the takeover', async (t) => {
  const a = await host('host_a')
  await a.kv.put('job.job_8', encode({ n: 0, todo: 0, done: 2, by: ['host_x', 'host_x'] }))
  await a.kv.put('work.job_8', new Uint8Array())
  await a.take('job_8')
  await until('the marker is cleared', async () => (await a.kv.get('work.job_8'))?.operation !== 'PUT')
  t.equal((await a.get('job_8')).done, 2, 'and the state is as stored')
})

t.test('work that fails again and again is abandoned: the kind says how, and the marker goes', async (t) => {
  const a = await host('host_a', { failSteps: true, maxRebuilds: 2 })
  await a.take('job_7')
  await a.start('job_7', 2)
  const given = await until('abandoned', async () => {
    const v = await a.get('job_7')
    return v.why && v
  })
  t.match(given.why, /failed 2 times in a row/)
  t.same([given.todo, given.done], [0, 0])
  await until('the marker is cleared', async () => (await a.kv.get('work.job_7'))?.operation !== 'PUT')
})

t.test('a fenced record: the first write creates it, and a write or delete after another writer is refused', async (t) => {
  const kv = await kvm.create('troupe_test_fenced', { history: 1 })
  const store = new RecordStore<number>(kv)
  const rec = new FencedRecord(store, 'r.1', 0)
  await rec.write(1)
  await rec.write(2)
  t.equal((await store.get('r.1'))?.value, 2)
  await kv.put('r.1', encode(7))
  t.ok((await caught(rec.write(3))) instanceof FenceLost, 'a write is fenced off')
  t.ok((await caught(rec.delete())) instanceof FenceLost, 'and so is a delete')
  const fresh = new FencedRecord(store, 'r.1', (await store.get('r.1'))!.revision)
  await fresh.delete()
  t.equal(await store.get('r.1'), undefined)
})
