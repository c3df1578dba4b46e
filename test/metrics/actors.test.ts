import t from 'tap'
import pino from 'pino'
import { type Activatable, Activations } from '../../actors/kit/activation.js'
import { Mailbox } from '../../actors/kit/mailbox.js'
import { registry } from '../../metrics/index.js'
import { counted } from '../../sandbox/metrics.js'
import type { Sandbox, SandboxOptions } from '../../sandbox/index.js'
import { parsePromText, sampleSum } from '../helpers/prom-text.js'
import { until } from '../helpers/wait.js'

// The kit's and the sandbox layer's metrics in one process, without a server: activations, passivations, actors in
// memory, partition moves and mailbox depth of a kind of its own; sandboxes open through a counted backend.

const log = pino({ level: 'silent' })
const KIND = 'metricstest'
const scrape = async () => parsePromText(await registry.metrics())

class Fake implements Activatable {
  dead = false
  lastActive = Date.now()
  constructor(readonly id: string) {}
  async passivate() {
    this.dead = true
    return true
  }
  async shutdown() {
    this.dead = true
  }
  kick() {}
  abandon() {}
}

t.test('activations, passivations, actors in memory and partition moves, by kind', async (t) => {
  const a = new Activations<Fake>({
    kind: KIND,
    log,
    serves: () => true,
    load: async (id) => new Fake(id),
    listWork: async () => [],
    idleMs: 100,
  })
  t.teardown(() => a.close())
  await a.acquired(1)
  await a.acquired(2)
  await a.released(2)
  await a.get('c1')
  await a.get('c1')
  a.add(new Fake('c2'))
  let f = await scrape()
  t.equal(sampleSum(f, 'troupe_actor_activations_total', { kind: KIND }), 2, 'a load and a create; the second get found it live')
  t.equal(sampleSum(f, 'troupe_actors_live', { kind: KIND }), 2)
  t.equal(sampleSum(f, 'troupe_partition_moves_total', { kind: KIND, direction: 'gained' }), 2)
  t.equal(sampleSum(f, 'troupe_partition_moves_total', { kind: KIND, direction: 'lost' }), 1)
  f = await until('both passivated', async () => {
    const s = await scrape()
    return sampleSum(s, 'troupe_actor_passivations_total', { kind: KIND }) === 2 ? s : undefined
  })
  t.equal(sampleSum(f, 'troupe_actors_live', { kind: KIND }), 0)
  await a.close()
  t.notOk(
    (await scrape()).get('troupe_actors_live')?.samples.some((s) => s.labels.kind === KIND),
    'a closed kind is no source any more',
  )
})

t.test('the mailbox depth counts queued writes until each is done, a failed one included', async (t) => {
  const mb = new Mailbox({
    kind: KIND,
    id: 'c1',
    log,
    work: { kv: { put: async () => 0, delete: async () => undefined } as never, key: 'w' },
    onFail: () => {},
  })
  let release = () => {}
  const first = mb.write(() => new Promise<void>((r) => (release = r)))
  const second = mb.write(async () => {
    throw new Error('bad data')
  })
  const depth = async () => sampleSum(await scrape(), 'troupe_actor_mailbox_depth', { kind: KIND })
  t.equal(await depth(), 2)
  release()
  await first
  await t.rejects(second)
  await mb.settled()
  t.equal(await depth(), 0)
})

t.test('sandboxes open through a counted backend, each close counted once', async (t) => {
  const made: Sandbox[] = []
  const backend = counted({
    kind: 'fake',
    create: (_: SandboxOptions) => {
      const s = { close: async () => {} } as unknown as Sandbox
      made.push(s)
      return s
    },
  })
  backend.create({} as never)
  backend.create({} as never)
  const open = async () => sampleSum(await scrape(), 'troupe_sandboxes_open', { backend: 'fake' })
  t.equal(await open(), 2)
  await made[0]!.close()
  await made[0]!.close()
  t.equal(await open(), 1)
})
