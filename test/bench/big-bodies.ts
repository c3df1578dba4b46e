// `bodies`: how long a `troupe serve` event loop stalls while large bodies arrive (issue 16, point 6), read by
// test/helpers/loop-probe.mjs inside the server. Phases: 36 bodies of 5 MB refused 400 after parsing (the
// repro: too many events), then 8 bodies of 32 MiB refused 400 after parsing (a wrong type deep inside), then
// 8 user.messages of 20 MiB each stored, 4 requests in flight. Each phase prints the server's longest loop stall
// and p99, and whether the host kept its partitions. The baseline row is the same server idle for as long.
import { startNats } from '../helpers/nats.js'
import { LOOP_PROBE_ENV, readLoopStall } from '../helpers/loop-stall.js'
import { clientFor, startTroupe } from '../helpers/troupe.js'

async function inBatches(n: number, inFlight: number, one: (i: number) => Promise<number>): Promise<Map<number, number>> {
  const statuses = new Map<number, number>()
  let next = 0
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < n) {
        const s = await one(next++)
        statuses.set(s, (statuses.get(s) ?? 0) + 1)
      }
    }),
  )
  return statuses
}

export async function runBodyBench(): Promise<void> {
  const nats = await startNats()
  const troupe = await startTroupe({ natsUrl: nats.url, env: { LOG_LEVEL: 'info', ...LOOP_PROBE_ENV } })
  try {
    const client = clientFor(troupe.url)
    const agent = await client.beta.agents.create({ name: 'bench', model: 'claude-sonnet-4-5' })
    const env = await client.beta.environments.create({ name: 'bench' })
    const session = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id })
    const eventsUrl = `${troupe.url}/v1/sessions/${session.id}/events`
    const post = (url: string, body: Buffer) =>
      fetch(url, { method: 'POST', body: new Uint8Array(body), headers: { 'content-type': 'application/json' } }).then(async (r) => {
        await r.arrayBuffer()
        return r.status
      })

    const tooMany = Buffer.from(
      JSON.stringify({ events: Array.from({ length: 40_000 }, () => ({ type: 'user.message', content: [{ type: 'text', text: 'x'.repeat(100) }] })) }),
    )
    const wrongDeep = Buffer.from(
      JSON.stringify({
        events: [{ type: 'user.message', content: Array.from({ length: 1000 }, (_, i) => ({ type: 'text', text: i === 999 ? 1 : 'y'.repeat(33_000) })) }],
      }),
    )
    const big = Buffer.from(JSON.stringify({ events: [{ type: 'user.message', content: [{ type: 'text', text: 'z'.repeat(20 * 1024 * 1024) }] }] }))
    const phases: Array<[string, () => Promise<Map<number, number>>]> = [
      [
        'idle (baseline)',
        async () => {
          await new Promise((r) => setTimeout(r, 3000))
          return new Map()
        },
      ],
      [`36 × ${(tooMany.length / 1e6).toFixed(1)} MB, 400 after parsing`, () => inBatches(36, 8, () => post(eventsUrl, tooMany))],
      [`8 × ${(wrongDeep.length / 1048576).toFixed(1)} MiB, 400 after parsing`, () => inBatches(8, 4, () => post(eventsUrl, wrongDeep))],
      [`8 × ${(big.length / 1048576).toFixed(1)} MiB user.message, stored`, () => inBatches(8, 4, () => post(eventsUrl, big))],
    ]
    console.log('\nbodies: the server event loop while large bodies arrive (loop-probe, 10 ms resolution)')
    console.log('phase                                              loop max ms  p99 ms   statuses')
    await readLoopStall(troupe)
    for (const [name, run] of phases) {
      const t0 = performance.now()
      const statuses = await run()
      const took = performance.now() - t0
      const { max, p99 } = await readLoopStall(troupe)
      const st = [...statuses].map(([s, n]) => `${n}×${s}`).join(' ')
      console.log(`${name.padEnd(50)} ${max.toFixed(0).padStart(11)} ${p99.toFixed(0).padStart(7)}   ${st} (${(took / 1000).toFixed(1)} s)`)
    }
    const lost =
      troupe
        .logs()
        .split('\n')
        .filter((l) => l.includes('"msg":"partitions changed"')).length - 1
    const ready = (await fetch(`${troupe.url}/readyz`)).status
    console.log(`partition changes after start-up: ${Math.max(0, lost)}; /readyz ${ready}`)
  } finally {
    await troupe.stop()
    await nats.stop()
  }
}
