// `npm run bench -- memory`: one memory store of 10,000 memories (1 KiB each, 100 folders of 100) on `troupe start`, as
// `npm start` runs it: creates per second through the API (32 at a time; again spread over 8 stores), then the p50/p99 of listing one folder
// (`path_prefix`, 100 memories, `view=basic`), the store's top level (`depth=1`: 100 `memory_prefix` entries) and a
// full page (`view=full`, 20 with content). Beside them, in the same run on the same nats-server, the raw KV baseline:
// 10,000 KV creates of the same bytes (and two per memory, as a create here writes the content, then the head), and a
// folder listed from KV as a store that keeps each memory under a key of its path would (a filtered key listing, then
// a get of each of its 100 keys). Then a session's mount of a store of 1,000 memories (1 KiB, 20 folders): the
// first tool of a fresh session that mounts it (the store materialised before the tool runs) against the first tool
// of a session without stores (the sandbox's start and bash alone), and the raw baseline: the same 1,000 values got
// from KV and written as files by this process. BENCH_MEMORIES (default 10,000), BENCH_LISTS (default 300 of each),
// BENCH_MOUNTED (default 1,000), BENCH_MOUNT_ROUNDS (default 3).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { Kvm } from '@nats-io/kv'
import { connect } from '@nats-io/transport-node'
import { jetstream } from '@nats-io/jetstream'
import { listKeys } from '../../actors/kit/kv-keys.js'
import { MemoryRecords } from '../../actors/memory/records.js'
import { Buckets } from '../../protocol/subjects.js'
import { bed, ms, pool, ready, request as send, sleep, summary } from './bed.js'

const MEMORIES = Number(process.env.BENCH_MEMORIES ?? 10_000)
const LISTS = Number(process.env.BENCH_LISTS ?? 300)
const MOUNTED = Number(process.env.BENCH_MOUNTED ?? 1000)
const MOUNT_ROUNDS = Number(process.env.BENCH_MOUNT_ROUNDS ?? 3)
const CONCURRENCY = 32
const FOLDERS = 100
const content = (i: number) => `${`memory ${i} `.padEnd(1024, '.')}`
const pathOf = (i: number) => `/d${String(i % FOLDERS).padStart(2, '0')}/m${String(Math.floor(i / FOLDERS)).padStart(4, '0')}.md`

async function timedEach(n: number, concurrency: number, fn: (i: number) => Promise<unknown>): Promise<number[]> {
  const times: number[] = []
  await pool(
    Array.from({ length: n }, (_, i) => i),
    concurrency,
    async (i) => {
      const t0 = performance.now()
      await fn(i)
      times.push(performance.now() - t0)
    },
  )
  return times
}

async function throughput(n: number, fn: (i: number) => Promise<unknown>): Promise<number> {
  const t0 = performance.now()
  await pool(
    Array.from({ length: n }, (_, i) => i),
    CONCURRENCY,
    async (i) => {
      await fn(i)
    },
  )
  return n / ((performance.now() - t0) / 1000)
}

const line = (name: string, xs: number[]) => {
  const s = summary(xs)
  return `  ${name.padEnd(46)} p50 ${ms(s.p50).padStart(9)}  p99 ${ms(s.p99).padStart(9)}  (${s.n})`
}

export async function runMemoryBench(): Promise<void> {
  // The fake model answers `run: <command>` with that bash command (model-process.ts).
  const b = await bed({}, { BENCH_MODEL_SCRIPT: 'commands' })
  const { troupe } = b
  const natsUrl = b.nats.url
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY })
  // A kept-alive socket the server closed as the client reused it resets once; a server gone fails the second time too.
  const request = (a: http.Agent, url: string, method: string, p: string, body?: unknown) =>
    send(a, url, method, p, body).catch((err) => (err?.code === 'ECONNRESET' ? send(a, url, method, p, body) : Promise.reject(err)))
  const nc = await connect({ servers: natsUrl })
  try {
    await ready(troupe.url)
    const store = (await request(agent, troupe.url, 'POST', '/v1/memory_stores', { name: 'bench' })).id as string
    const base = `/v1/memory_stores/${store}`

    const apiRate = await throughput(MEMORIES, (i) => request(agent, troupe.url, 'POST', `${base}/memories`, { path: pathOf(i), content: content(i) }))
    // A store's writes run one at a time on its owner; stores are independent of each other.
    const spread: string[] = []
    for (let i = 0; i < 8; i++) spread.push((await request(agent, troupe.url, 'POST', '/v1/memory_stores', { name: `bench ${i}` })).id)
    const spreadRate = await throughput(MEMORIES, (i) =>
      request(agent, troupe.url, 'POST', `/v1/memory_stores/${spread[i % spread.length]}/memories`, { path: pathOf(i), content: content(i) }),
    )
    const kv = await new Kvm(nc).create('bench_raw_memories', { history: 1 })
    const rawRate = await throughput(MEMORIES, (i) => kv.create(`one.d${i % FOLDERS}.m${Math.floor(i / FOLDERS)}`, Buffer.from(content(i))))
    const rawTwoRate = await throughput(MEMORIES, async (i) => {
      await kv.create(`c.${i}`, Buffer.from(content(i)))
      await kv.create(`m.${i}`, Buffer.from(JSON.stringify({ path: pathOf(i), sha: 'x'.repeat(64), size: 1024 })))
    })
    console.log(`\nmemory stores: ${MEMORIES} memories of 1 KiB in one store, ${FOLDERS} folders, ${CONCURRENCY} at a time (troupe start)`)
    console.log(`  create through the API, one store              ${apiRate.toFixed(0).padStart(6)} /s`)
    console.log(`  create through the API, spread over 8 stores   ${spreadRate.toFixed(0).padStart(6)} /s`)
    console.log(`  raw KV create, one write each                  ${rawRate.toFixed(0).padStart(6)} /s  (API at ${((apiRate / rawRate) * 100).toFixed(0)}%)`)
    console.log(
      `  raw KV, two creates each (content, then head)  ${rawTwoRate.toFixed(0).padStart(6)} /s  (API at ${((apiRate / rawTwoRate) * 100).toFixed(0)}%)`,
    )

    const folder = (i: number) => `d${String(i % FOLDERS).padStart(2, '0')}`
    // Warm.
    await timedEach(20, 4, (i) => request(agent, troupe.url, 'GET', `${base}/memories?path_prefix=/${folder(i)}/&limit=100`))
    const prefix = await timedEach(LISTS, 4, (i) => request(agent, troupe.url, 'GET', `${base}/memories?path_prefix=/${folder(i)}/&limit=100`))
    const top = await timedEach(LISTS, 4, () => request(agent, troupe.url, 'GET', `${base}/memories?depth=1&limit=100`))
    const full = await timedEach(LISTS, 4, (i) => request(agent, troupe.url, 'GET', `${base}/memories?path_prefix=/${folder(i)}/&view=full&limit=20`))
    const rawList = await timedEach(LISTS, 4, async (i) => {
      const keys = await listKeys(kv, `one.d${i % FOLDERS}.>`)
      await Promise.all(keys.map((k) => kv.get(k)))
    })
    console.log(`  listing, ${LISTS} of each, 4 at a time:`)
    console.log(line('one folder, 100 memories, basic', prefix))
    console.log(line('top level, depth=1: 100 memory_prefix entries', top))
    console.log(line('one folder, view=full: 20 with content', full))
    console.log(line("raw KV: a folder's keys listed, then 100 gets", rawList))
    // What an activation of the store's actor reads first (after a move, a restart, passivation): every head.
    const records = new MemoryRecords(await new Kvm(nc).open(Buckets.memories), Buckets.memories, jetstream(nc), () => true)
    const loads: number[] = []
    let heads = 0
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now()
      heads = (await records.loadHeads(store)).length
      loads.push(performance.now() - t0)
    }
    console.log(line(`loading the store's ${heads} heads (an activation)`, loads))
    const check = await request(agent, troupe.url, 'GET', `${base}/memories?path_prefix=/d07/&limit=100`)
    if (check.data.length !== MEMORIES / FOLDERS) throw new Error(`a folder listed ${check.data.length} memories, not ${MEMORIES / FOLDERS}`)
    await mountBench((method, p, body) => request(agent, troupe.url, method, p, body), kv)
  } finally {
    agent.destroy()
    await nc.close()
    b.stop()
  }
}

type Call = (method: string, p: string, body?: unknown) => Promise<any>

/** The time from a session's bash tool use to its result, in a turn that runs `command` once. */
async function firstTool(call: Call, session: string, command: string): Promise<number> {
  await call('POST', `/v1/sessions/${session}/events`, { events: [{ type: 'user.message', content: [{ type: 'text', text: `run: ${command}` }] }] })
  const deadline = Date.now() + 120_000
  for (;;) {
    const events = (await call('GET', `/v1/sessions/${session}/events?limit=100`)).data as any[]
    const use = events.find((e) => e.type === 'agent.tool_use')
    const result = events.find((e) => e.type === 'agent.tool_result')
    if (use && result && events.some((e) => e.type === 'session.status_idle' && e.processed_at >= result.processed_at)) {
      const out = (result.content as any[]).map((c) => c.text ?? '').join('')
      if (result.is_error) throw new Error(`the tool failed: ${out}`)
      if (command.includes('wc -l') && Number(out.trim()) !== MOUNTED) throw new Error(`the mount held ${out.trim()} files, not ${MOUNTED}`)
      return Date.parse(result.processed_at) - Date.parse(use.processed_at)
    }
    if (Date.now() > deadline) throw new Error(`session ${session}: no tool result within 120 s`)
    await sleep(50)
  }
}

async function mountBench(call: Call, kv: Awaited<ReturnType<Kvm['create']>>): Promise<void> {
  const store = (await call('POST', '/v1/memory_stores', { name: 'mounted' })).id as string
  const folderOf = (i: number) => `f${String(i % 20).padStart(2, '0')}`
  await pool(
    Array.from({ length: MOUNTED }, (_, i) => i),
    CONCURRENCY,
    async (i) => void (await call('POST', `/v1/memory_stores/${store}/memories`, { path: `/${folderOf(i)}/m${i}.md`, content: content(i) })),
  )
  await Promise.all(Array.from({ length: MOUNTED }, (_, i) => kv.put(`mount.${i}`, Buffer.from(content(i)))))
  const agentId = (await call('POST', '/v1/agents', { name: 'mounts', model: 'claude-sonnet-4-6', tools: [{ type: 'agent_toolset_20260401' }] })).id
  const envId = (await call('POST', '/v1/environments', { name: 'mounts' })).id
  const newSession = async (resources: unknown[]) => (await call('POST', '/v1/sessions', { agent: agentId, environment_id: envId, resources })).id as string
  const mounted: number[] = []
  const bare: number[] = []
  const raw: number[] = []
  for (let round = 0; round < MOUNT_ROUNDS; round++) {
    const withStore = await newSession([{ type: 'memory_store', memory_store_id: store, access: 'read_only' }])
    mounted.push(await firstTool(call, withStore, 'find /mnt/memory/mounted -type f | wc -l'))
    bare.push(await firstTool(call, await newSession([]), 'true'))
    // What materialising asks at least: every content read, every file written.
    const dir = mkdtempSync(path.join(tmpdir(), 'troupe-bench-mount-'))
    const t0 = performance.now()
    for (let f = 0; f < 20; f++) mkdirSync(path.join(dir, folderOf(f)))
    await pool(
      Array.from({ length: MOUNTED }, (_, i) => i),
      CONCURRENCY,
      async (i) => writeFileSync(path.join(dir, folderOf(i), `m${i}.md`), (await kv.get(`mount.${i}`))!.value),
    )
    raw.push(performance.now() - t0)
    rmSync(dir, { recursive: true, force: true })
  }
  const med = (xs: number[]) => summary(xs).p50
  const cost = med(mounted) - med(bare)
  console.log(`  a session's first tool over a mount of ${MOUNTED} memories of 1 KiB (${MOUNT_ROUNDS} fresh sessions, medians):`)
  console.log(`    with the store mounted read-only             ${ms(med(mounted)).padStart(10)}  (${mounted.map((x) => x.toFixed(0)).join(', ')} ms)`)
  console.log(`    a session without stores                     ${ms(med(bare)).padStart(10)}  (${bare.map((x) => x.toFixed(0)).join(', ')} ms)`)
  console.log(`    materialising, the difference                ${ms(cost).padStart(10)}`)
  console.log(`    raw: ${MOUNTED} KV gets written as files       ${ms(med(raw)).padStart(10)}  (materialising at ${(cost / med(raw)).toFixed(1)}× raw)`)
}
