// `npm run bench -- work`: the self-hosted work queue (issue 29), through the official client on one `troupe serve`:
//   poll-to-claim    100 queued items, 20 pollers: each claim's poll + ack, p50/p99
//   queue-to-claim   20 pollers waiting (block_ms 999), sessions created one by one: from the create's send to the poll
//                    answer that hands its item out, p50/p99
//   idle pollers     CPU of the host and of nats-server (% of one core) with 0, 20 and 200 pollers long-polling an empty
//                    queue at block_ms 999, each polling again at once (worse than the client's poller, which sleeps 1–3 s)
import { readdirSync, readFileSync } from 'node:fs'
import { performance } from 'node:perf_hooks'
import Anthropic from '@anthropic-ai/sdk'
import { startNats } from '../helpers/nats.js'
import { startTroupe } from '../helpers/troupe.js'

const IDLE_MS = Number(process.env.BENCH_WORK_IDLE_MS ?? 10_000)
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))] ?? Number.NaN
const ms = (x: number) => `${x.toFixed(1)} ms`

/** CPU ms of one process (user + system), from /proc. */
function cpuOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100
}

/** The nats-server process of a process group (the test server runs under a watchdog in its group). */
function natsPid(pgid: number): number {
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8')
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))
      const pgrp = Number(stat.split(') ')[1]!.split(' ')[2])
      if (pgrp === pgid && comm.startsWith('nats-server')) return Number(d)
    } catch {
      // Gone meanwhile.
    }
  }
  throw new Error(`no nats-server in process group ${pgid}`)
}

export async function runWorkBench(): Promise<void> {
  const nats = await startNats()
  const troupe = await startTroupe({ natsUrl: nats.url, env: { LOG_LEVEL: 'warn' } })
  try {
    const client = new Anthropic({ baseURL: troupe.url, apiKey: 'k', maxRetries: 3 })
    const work = client.beta.environments.work
    const agent = await client.beta.agents.create({ name: 'bench', model: 'claude-sonnet-4-5', tools: [{ type: 'agent_toolset_20260401' }] } as any)
    const newEnv = () => client.beta.environments.create({ name: 'bench', config: { type: 'self_hosted' } } as any)
    const session = (env: string) => client.beta.sessions.create({ agent: agent.id, environment_id: env } as any)
    console.log('work queue (one troupe serve, the official client)')

    // Poll-to-claim: 100 queued, 20 pollers take them all.
    const env1 = await newEnv()
    for (let i = 0; i < 100; i++) await session(env1.id)
    const claims: number[] = []
    const t0 = performance.now()
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        for (;;) {
          const a = performance.now()
          const item = await work.poll(env1.id, { block_ms: 50 })
          if (!item) return
          await work.ack(item.id, { environment_id: env1.id })
          claims.push(performance.now() - a)
        }
      }),
    )
    const took = performance.now() - t0
    console.log(
      `  poll-to-claim   ${claims.length} items, 20 pollers: p50 ${ms(pct(claims, 0.5))}  p99 ${ms(pct(claims, 0.99))}  (all in ${took.toFixed(0)} ms, ${((claims.length * 1000) / took).toFixed(0)} claims/s)`,
    )

    // Queue-to-claim with pollers waiting.
    const env2 = await newEnv()
    const sentAt = new Map<string, number>()
    const handedAt = new Map<string, number>()
    let stop = false
    const pollers = Array.from({ length: 20 }, async () => {
      while (!stop) {
        const item = await work.poll(env2.id, { block_ms: 999 })
        if (!item) continue
        handedAt.set(item.data.id, performance.now())
        await work.ack(item.id, { environment_id: env2.id })
      }
    })
    await new Promise((r) => setTimeout(r, 300))
    for (let i = 0; i < 50; i++) {
      const a = performance.now()
      // Its item may be handed out before the create answers: both times are matched by session id at the end.
      const s = await session(env2.id)
      sentAt.set(s.id, a)
      await new Promise((r) => setTimeout(r, 30))
    }
    await new Promise((r) => setTimeout(r, 1500))
    stop = true
    await Promise.all(pollers)
    const handed = [...sentAt].flatMap(([id, sent]) => (handedAt.has(id) ? [handedAt.get(id)! - sent] : []))
    console.log(`  queue-to-claim  ${handed.length}/50 items, 20 waiting pollers: p50 ${ms(pct(handed, 0.5))}  p99 ${ms(pct(handed, 0.99))}`)

    // CPU with idle pollers.
    const env3 = await newEnv()
    const natsProc = natsPid(nats.pgid)
    for (const n of [0, 20, 200]) {
      let on = true
      const loops = Array.from({ length: n }, async () => {
        while (on) await work.poll(env3.id, { block_ms: 999, 'Anthropic-Worker-ID': `idle-${n}` })
      })
      await new Promise((r) => setTimeout(r, 1500))
      const h0 = cpuOf(troupe.proc.pid!)
      const n0 = cpuOf(natsProc)
      const w0 = performance.now()
      await new Promise((r) => setTimeout(r, IDLE_MS))
      const wall = performance.now() - w0
      const host = ((cpuOf(troupe.proc.pid!) - h0) / wall) * 100
      const srv = ((cpuOf(natsProc) - n0) / wall) * 100
      on = false
      await Promise.all(loops)
      console.log(`  idle pollers ${String(n).padStart(3)}: host CPU ${host.toFixed(1)} %, nats-server CPU ${srv.toFixed(1)} % of one core`)
    }
  } finally {
    await troupe.stop()
    await nats.stop()
  }
}
