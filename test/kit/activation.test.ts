import t from 'tap'
import pino from 'pino'
import { partitionOf } from '../../protocol/subjects.js'
import { Activations, type Activatable } from '../../actors/kit/activation.js'
import { until } from '../helpers/wait.js'

const log = pino({ level: 'silent' })

class Fake implements Activatable {
  dead = false
  lastActive = Date.now()
  busy = false
  kicks = 0
  abandoned: string | undefined
  constructor(readonly id: string) {}
  async passivate() {
    if (this.busy) return false
    this.dead = true
    return true
  }
  async shutdown() {
    this.dead = true
  }
  kick() {
    this.kicks++
  }
  abandon(message: string) {
    this.abandoned = message
  }
}

function activations(opts: { exists?: (id: string) => boolean; work?: string[]; idleMs?: number; serves?: () => boolean; maxRebuilds?: number } = {}) {
  const loads: string[] = []
  const built: Fake[] = []
  const a = new Activations<Fake>({
    kind: 'counter',
    log,
    serves: opts.serves ?? (() => true),
    load: async (id) => {
      loads.push(id)
      await new Promise((r) => setTimeout(r, 5))
      if (opts.exists && !opts.exists(id)) return undefined
      const f = new Fake(id)
      built.push(f)
      return f
    },
    listWork: async (p) => (opts.work ?? []).filter((id) => partitionOf(id) === p),
    idleMs: opts.idleMs ?? 60_000,
    maxRebuilds: opts.maxRebuilds,
    rebuildMaxWaitMs: 20,
  })
  t.teardown(() => a.close())
  return { a, loads, built }
}

t.test('one load per id, however many ask at once; later asks find it live', async (t) => {
  const { a, loads } = activations()
  const [x, y] = await Promise.all([a.get('c1'), a.get('c1')])
  t.equal(x, y)
  t.equal(await a.get('c1'), x)
  t.same(loads, ['c1'])
  t.equal(a.peek('c1'), x)
  t.equal(a.peek('c2'), undefined, 'peek never loads')
})

t.test('an id that does not exist stays absent', async (t) => {
  const { a } = activations({ exists: () => false })
  t.equal(await a.get('nope'), undefined)
})

t.test('an idle actor is passivated; a busy one stays; the next ask loads it again', async (t) => {
  const { a, loads, built } = activations({ idleMs: 60 })
  const idle = (await a.get('c1'))!
  const busy = (await a.get('c2'))!
  busy.busy = true
  idle.lastActive = busy.lastActive = 0
  await until('the idle actor leaves', () => idle.dead, 5000)
  t.notOk(busy.dead, 'a busy actor stays')
  t.equal(a.peek('c1'), undefined)
  const again = await a.get('c1')
  t.not(again, idle)
  t.same(loads, ['c1', 'c2', 'c1'])
  t.equal(built.length, 3)
})

t.test('a failed actor of an owned partition is rebuilt and kicked at once; not one of a partition given away', async (t) => {
  const { a, built } = activations()
  await a.acquired(partitionOf('c1'))
  const first = (await a.get('c1'))!
  first.dead = true
  a.crashed(first, false)
  await until('rebuilt', () => built.length === 2 && built[1]!.kicks === 1, 5000)
  t.equal(await a.get('c1'), built[1])

  const other = (await a.get('z9'))!
  t.not(partitionOf('z9'), partitionOf('c1'), 'z9 is of a partition this host was not given')
  other.dead = true
  a.crashed(other, false)
  // A rebuild of z9 would have been scheduled before this one of c1: once c1 is back, z9 would be too.
  const second = built[1]!
  second.dead = true
  a.crashed(second, false)
  await until('c1 rebuilt again', () => built.filter((b) => b.id === 'c1').length === 3, 5000)
  t.equal(built.filter((b) => b.id === 'z9').length, 1, 'not rebuilt: this host does not own its partition')
})

t.test('a rebuild waits while this host may not serve, then goes on', async (t) => {
  let serving = false
  const { a, built } = activations({ serves: () => serving })
  await a.acquired(partitionOf('c1'))
  const first = (await a.get('c1'))!
  first.dead = true
  a.crashed(first, false)
  await new Promise((r) => setTimeout(r, 60))
  t.equal(built.length, 1, 'no rebuild while the heartbeat has lapsed')
  serving = true
  await until('rebuilt once serving', () => built.length === 2 && built[1]!.kicks === 1, 5000)
})

t.test('an actor that fails on its own again and again has its work abandoned', async (t) => {
  const { a, built } = activations({ maxRebuilds: 2 })
  await a.acquired(partitionOf('c1'))
  for (let i = 0; i < 2; i++) {
    const cur = (await a.get('c1'))!
    cur.dead = true
    a.crashed(cur, true)
    await until(`rebuild ${i + 1}`, () => built.length === i + 2, 5000)
  }
  await until('abandoned', () => built[2]?.abandoned !== undefined, 5000)
  t.match(built[2]!.abandoned!, /failed 2 times in a row/)
  t.equal(built[1]!.kicks, 1, 'the rebuild before the bound was kicked')
  t.equal(built[2]!.kicks, 0, 'the last one gives its work up instead')
})

t.test('taking a partition over resumes its actors with work; giving it away shuts them down', async (t) => {
  const ids = ['a1', 'b2', 'c3', 'd4', 'e5', 'f6']
  const p = partitionOf(ids[0]!)
  const { a, built } = activations({ work: ids })
  await a.acquired(p)
  const mine = ids.filter((id) => partitionOf(id) === p)
  await until('resumed', () => built.length === mine.length && built.every((b) => b.kicks === 1), 5000)
  t.same(built.map((b) => b.id).sort(), mine.sort(), "only the partition's actors with work")
  await a.released(p)
  t.ok(
    built.every((b) => b.dead),
    'shut down',
  )
  t.equal(a.peek(ids[0]!), undefined)
})

t.test('a load that the partition being given away overtakes is not kept: its actor answers as a stopped one', async (t) => {
  const { a } = activations()
  const p = partitionOf('c1')
  await a.acquired(p)
  const loading = a.get('c1')
  await a.released(p)
  const stale = (await loading)!
  t.ok(stale.dead, 'shut down')
  t.equal(a.peek('c1'), undefined, 'not kept')
  const again = (await a.get('c1'))!
  t.not(again, stale, 'the next ask loads it afresh')
  t.notOk(again.dead)
})
