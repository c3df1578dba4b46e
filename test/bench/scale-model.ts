// `npm run bench -- scale-model`: a model in code of Troupe at 100 hosts and 10 million sessions (issue 44, point 6),
// for the walls docs/ARCHITECTURE.md "Scaling model" names. What can be run is run (the real `plan()` over 100 hosts and
// 1,024 partitions, the memory of projected sessions as this process holds them); what cannot be (100 hosts, a
// 3-node cluster's leaders) is computed from rates measured in the same run on one nats-server against its baselines
// (a raw KV put loop, a raw stream publish loop, a raw core-NATS delivery loop). Figures are per this machine.
import { performance } from 'node:perf_hooks'
import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { Kvm } from '@nats-io/kv'
import { connect } from '@nats-io/transport-node'
import { plan } from '../../supervisor/placement.js'
import { startNats } from '../helpers/nats.js'

/** Kinds placed by partition today (the host's `partitions` line). */
const PARTITIONED_KINDS = ['agent', 'vault', 'session', 'deployment', 'skill', 'webhook', 'work_queue', 'memory_store', 'dream']
const BEATS_PER_S = 2
const REPLICAS = 3

const hostIds = (n: number) => Array.from({ length: n }, (_, i) => `host_${String(i).padStart(4, '0')}model`)
const fmt = (n: number) => (n >= 100 ? Math.round(n).toLocaleString('en') : n.toFixed(n >= 10 ? 1 : 2))

/** One placement pass's planning (every partitioned kind), and what a host leaving or joining moves. */
function placement(hosts: number, partitions: number) {
  const ids = hostIds(hosts + 1)
  const now = ids.slice(0, hosts)
  const t0 = performance.now()
  const before = PARTITIONED_KINDS.map((k) => plan(k, now, partitions))
  const planMs = performance.now() - t0
  const gone = now[hosts - 1]!
  const after = PARTITIONED_KINDS.map((k) => plan(k, now.slice(0, -1), partitions))
  const joined = PARTITIONED_KINDS.map((k) => plan(k, ids, partitions))
  let orphaned = 0
  let survivorMoves = 0
  let joinMoves = 0
  let joinShare = 0
  for (const [k, b] of before.entries()) {
    for (const [p, owner] of b.entries()) {
      if (owner === gone) orphaned++
      else if (after[k]![p] !== owner) survivorMoves++
      if (joined[k]![p] !== owner) joinMoves++
      if (joined[k]![p] === ids[hosts]) joinShare++
    }
  }
  return { planMs, orphaned, survivorMoves, joinMoves, joinShare, records: partitions * PARTITIONED_KINDS.length }
}

async function rate(label: string, n: number, one: (i: number) => Promise<unknown>, inFlight = 64): Promise<number> {
  let next = 0
  const t0 = performance.now()
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < n) await one(next++)
    }),
  )
  const perS = n / ((performance.now() - t0) / 1000)
  console.log(`  measured  ${label.padEnd(52)} ${fmt(perS).padStart(10)} /s`)
  return perS
}

/** Bytes of heap per session as a projection holds it: the record with its agent snapshot (a 2,000-char prompt). */
function projectedSessionBytes(): number {
  const n = 20_000
  globalThis.gc?.()
  const before = process.memoryUsage().heapUsed
  const kept: unknown[] = []
  for (let i = 0; i < n; i++) {
    kept.push({
      id: `sesn_01M8MZ${String(i).padStart(20, '0')}`,
      type: 'session',
      status: 'idle',
      created_at: new Date(1_700_000_000_000 + i).toISOString(),
      updated_at: new Date(1_700_000_000_000 + i).toISOString(),
      archived_at: null,
      title: `session ${i}`,
      metadata: { n: String(i) },
      environment_id: 'env_01M8MZ9ZNWV2X2DKKX081MGZT6',
      agent: {
        id: 'agent_01M8MZ9ZNWV2X2DKKX081MGZT6',
        type: 'agent',
        version: 1,
        name: 'model',
        model: { id: 'claude-sonnet-4-5', speed: 'standard' },
        system: `${'You are a careful assistant. '.repeat(69)}${i}`.slice(0, 2000),
        tools: [{ type: 'agent_toolset_20260401', default_config: { enabled: true, permission_policy: { type: 'always_allow' } }, configs: [] }],
        mcp_servers: [],
        skills: [],
        description: null,
        metadata: {},
      },
      resources: [],
      vault_ids: [],
      usage: { input_tokens: i, output_tokens: i, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
      stats: { active_seconds: 0, duration_seconds: 0 },
    })
  }
  globalThis.gc?.()
  const bytes = (process.memoryUsage().heapUsed - before) / n
  if (kept.length !== n) throw new Error('unreachable')
  return bytes
}

export async function runScaleModelBench(): Promise<void> {
  console.log('\nscale model: 100 hosts, 10,000,000 stored sessions (issue 44 point 6); placement computed with the real plan()')
  console.log('\n  placement: one pass planning every partitioned kind, and the moves of one host leaving or joining')
  console.log('  hosts  partitions  plan ms/pass  records  leave: orphaned + survivor moves   join: moves (its share)')
  for (const hosts of [3, 10, 30, 100]) {
    for (const partitions of [32, 256, 1024]) {
      const r = placement(hosts, partitions)
      console.log(
        `  ${String(hosts).padStart(5)}  ${String(partitions).padStart(10)}  ${r.planMs.toFixed(1).padStart(12)}  ${String(r.records).padStart(7)}  ` +
          `${String(r.orphaned).padStart(8)} + ${String(r.survivorMoves).padEnd(22)}${String(r.joinMoves).padStart(8)} (${r.joinShare})`,
      )
    }
  }

  const nats = await startNats()
  const nc = await connect({ servers: nats.url })
  try {
    const jsm = await jetstreamManager(nc)
    const js = jetstream(nc)
    const kv = await new Kvm(js).create('model_beats', { history: 1, ttl: 2000 })
    await jsm.streams.add({ name: 'MODEL_EVENTS', subjects: ['model.events.>'] })
    console.log('\n  rates on this machine (one nats-server, R1; a 3-node cluster at R3 costs each leader more)')
    const putRate = await rate('raw KV put (one bucket: the hosts heartbeats)', 20_000, (i) => kv.put(`host.h${i % 100}`, 'x'))
    const body = new Uint8Array(400)
    const appendRate = await rate('raw stream publish, 400 B (one events stream)', 20_000, (i) => js.publish(`model.events.s${i % 1000}`, body))
    let got = 0
    const sub = nc.subscribe('model.watch', {
      callback: () => {
        got++
      },
    })
    const t0 = performance.now()
    for (let i = 0; i < 200_000; i++) nc.publish('model.watch', body)
    await nc.flush()
    while (got < 200_000 && performance.now() - t0 < 30_000) await new Promise((r) => setTimeout(r, 5))
    const deliveries = got / ((performance.now() - t0) / 1000)
    sub.unsubscribe()
    console.log(`  measured  ${'raw core-NATS deliveries to one subscriber (a watch)'.padEnd(52)} ${fmt(deliveries).padStart(10)} /s`)

    const sessionBytes = projectedSessionBytes()
    console.log(`  measured  ${'heap per projected session (2,000-char prompt)'.padEnd(52)} ${fmt(sessionBytes).padStart(10)} B`)

    const hosts = 100
    const beatWrites = hosts * BEATS_PER_S
    const watchPerHost = beatWrites
    console.log('\n  at 100 hosts and 10,000,000 stored sessions')
    const row = (what: string, value: string, against: string) => console.log(`  ${what.padEnd(58)} ${value.padStart(14)}   ${against}`)
    row(
      'heartbeat puts/s (0.5 s beats), one stream',
      fmt(beatWrites),
      `${((beatWrites / putRate) * 100).toFixed(1)} % of a raw KV put loop; ×${REPLICAS} stored at R${REPLICAS}`,
    )
    row('watch deliveries/s per host (every beat)', fmt(watchPerHost), `${((watchPerHost / deliveries) * 100).toFixed(2)} % of one subscriber's raw rate`)
    row('watch deliveries/s, whole cluster', fmt(hosts * watchPerHost), 'N² in hosts: the wall past a few hundred hosts')
    row(
      'sessions projection per host today (every host keeps all)',
      `${fmt((10_000_000 * sessionBytes) / 2 ** 30)} GiB`,
      'the first wall: issue 44 point 1 keeps per-partition list fields only',
    )
    const indexBytes = 300
    row(
      'owner-held list index (list fields, ~300 B), per host',
      `${fmt((10_000_000 * indexBytes) / hosts / 2 ** 20)} MiB`,
      `10 M × ${indexBytes} B over ${hosts} hosts`,
    )
    for (const active of [0.01, 0.05]) {
      const appends = 10_000_000 * active * 2
      row(
        `events appends/s, ${active * 100} % of sessions active at 2 events/s`,
        fmt(appends),
        `${(appends / appendRate).toFixed(1)}× one stream leader's raw rate: shards needed ≥ ${Math.ceil(appends / appendRate)}`,
      )
    }
    for (const limit of [20, 100]) {
      row(
        `list page of ${limit}, k-way merge over the owners`,
        `${fmt(hosts * limit)} items`,
        `${hosts} requests, each up to ${limit} items (${fmt((hosts * limit * indexBytes) / 1024)} KiB)`,
      )
    }
    const p = placement(hosts, 1024)
    row(
      'one host leaving, 1,024 partitions × 9 kinds: CAS writes',
      fmt(p.orphaned + p.survivorMoves),
      `${fmt(p.orphaned / (hosts - 1))} per survivor (the takeover's writes); ${p.survivorMoves} between survivors`,
    )
    row(
      'one placement pass (planning only) at 100 hosts, 1,024',
      `${fmt(p.planMs)} ms`,
      'per change of the live set or records, every host: the wall for placement',
    )
  } finally {
    await nc.close()
    await nats.stop()
  }
}
