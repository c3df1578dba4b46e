import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import Anthropic from '@anthropic-ai/sdk'
import t from 'tap'
import { asUserRuns, startTroupe } from '../helpers/troupe.js'
import { sessionStack } from '../sessions/_helpers.js'
import { type Beat, leaseOverlaps, readBeats } from './leases.js'

/**
 * Workers and hosts dying (issue 29's chaos, small: `npm run chaos` runs it at scale, test/chaos/workers.ts): three
 * hosts, four of the client's workers in processes of their own, six self-hosted sessions each doing two turns with a
 * tool use; two workers and one host SIGKILLed during the first turns. From the server's answers: no two workers ever
 * held one lease at once, every tool use was answered exactly once, every session ended its turns, and every item
 * stopped.
 */

const TTL_S = 4
const s = await sessionStack()
const env = { TROUPE_MODEL_BASE_URL: s.model.url, ANTHROPIC_API_KEY: 'fake-key', TROUPE_MODEL_RETRY_BASE_MS: '20' }
const b = await startTroupe({ natsUrl: s.nats.url, env })
const c = await startTroupe({ natsUrl: s.nats.url, env })
t.teardown(() => {
  b.killNow()
  c.killNow()
})
const client = new Anthropic({ baseURL: s.url, apiKey: 'k', maxRetries: 8 })
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

// A tool use for a new question, the end of the turn once its result is in.
s.model.setHandler((req) => {
  const msgs = (req.body as { messages: Array<{ role: string; content: unknown }> }).messages
  const last = msgs.at(-1)!
  const answered = Array.isArray(last.content) && (last.content as Array<{ type: string }>).some((b) => b.type === 'tool_result')
  return answered ? { steps: [{ type: 'text', text: 'done' }] } : { steps: [{ type: 'tool_use', name: 'bash', input: { command: 'echo ran' } }] }
})

function startWorker(url: string, envId: string, id: string, beats: Beat[]): ChildProcess {
  const workdir = mkdtempSync(path.join(os.tmpdir(), `troupe-${id}-`))
  const [cmd, ...args] = asUserRuns([process.execPath, '--import', 'tsx', 'test/work/worker-proc.ts', url, envId, id, workdir, String(TTL_S)])
  const p = spawn(cmd!, args, { stdio: ['ignore', 'pipe', 'ignore'] })
  readBeats(p, beats)
  t.teardown(() => p.kill('SIGKILL'))
  return p
}

async function events(id: string): Promise<any[]> {
  const all: any[] = []
  for await (const e of client.beta.sessions.events.list(id, { limit: 1000 } as any)) all.push(e)
  return all
}

/** Turns ended: a session whose last status is idle with end_turn, counted by its end_turn idles. */
async function turnsDone(id: string): Promise<number> {
  const evs = await events(id)
  const last = evs.filter((e) => e.type.startsWith('session.status_')).at(-1)
  if (last?.type !== 'session.status_idle' || last.stop_reason?.type !== 'end_turn') return -1
  return evs.filter((e) => e.type === 'session.status_idle' && e.stop_reason?.type === 'end_turn').length
}

async function until(what: string, ok: () => Promise<boolean>, ms: number, explain?: () => Promise<string>): Promise<void> {
  const deadline = Date.now() + ms
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}${explain ? `\n${await explain()}` : ''}`)
    await sleep(500)
  }
}

t.test('workers and a host SIGKILLed: leases exclusive, tool uses answered once, every item stopped', async (t) => {
  const agent = await client.beta.agents.create({ name: 'chaos', model: 'claude-sonnet-4-5', tools: [{ type: 'agent_toolset_20260401' }] } as any)
  const e = await client.beta.environments.create({ name: 'chaos', config: { type: 'self_hosted' } } as any)
  const beats: Beat[] = []
  // Workers on the two hosts that stay.
  const workers = Array.from({ length: 4 }, (_, i) => startWorker(i % 2 ? b.url : s.url, e.id, `w${i}`, beats))
  const sessions: Array<{ id: string }> = []
  for (let i = 0; i < 6; i++) sessions.push(await client.beta.sessions.create({ agent: agent.id, environment_id: e.id } as any))
  const say = (text: string) => ({ events: [{ type: 'user.message', content: [{ type: 'text', text }] }] }) as any
  for (const sn of sessions) await client.beta.sessions.events.send(sn.id, say('first'))

  // Killed while they hold items: once each has had a beat accepted.
  await until('w0 and w1 hold items', async () => ['w0', 'w1'].every((w) => beats.some((x) => x.w === w && x.state === 'active')), 30_000)
  workers[0]!.kill('SIGKILL')
  workers[1]!.kill('SIGKILL')
  await c.kill()

  // What each session and the queue look like, when one does not get there.
  const explain = async () => {
    const lines = await Promise.all(
      sessions.map(async (x) => `${x.id}: ${(await events(x.id)).map((e) => e.type.replace(/^(session|agent|user)\./, '')).join(' ')}`),
    )
    const items = (await client.beta.environments.work.list(e.id, { limit: 100 })).data.map((i) => `${i.id} ${i.data.id} ${i.state}`)
    return [...lines, ...items].join('\n')
  }
  await until('every session ended its first turn', async () => (await Promise.all(sessions.map((x) => turnsDone(x.id)))).every((n) => n >= 1), 90_000, explain)
  for (const sn of sessions) await client.beta.sessions.events.send(sn.id, say('second'))
  await until(
    'every session ended its second turn',
    async () => (await Promise.all(sessions.map((x) => turnsDone(x.id)))).every((n) => n >= 2),
    90_000,
    explain,
  )

  for (const sn of sessions) {
    const evs = await events(sn.id)
    const uses = evs.filter((x) => x.type === 'agent.tool_use')
    t.equal(uses.length, 2, `${sn.id}: two tool uses`)
    for (const u of uses) {
      const results = evs.filter((x) => (x.type === 'user.tool_result' || x.type === 'agent.tool_result') && x.tool_use_id === u.id)
      t.equal(results.length, 1, `${sn.id}: ${u.id} answered exactly once`)
    }
  }

  // Workers leave idle sessions after their maxIdleMs and stop the items; a killed worker's lapse and is taken again.
  const work = client.beta.environments.work
  await until('every item stopped', async () => (await work.list(e.id, { limit: 100 })).data.every((i) => i.state === 'stopped'), 60_000)

  // From the server's answers: a beat accepted for another worker comes only after the last holder's lease ran out.
  const leases = leaseOverlaps(beats)
  for (const o of leases.overlaps) t.fail(o)
  t.equal(
    leases.overlaps.length,
    0,
    `no two workers held one lease at once (${beats.length} beats, ${leases.items.size} items, ${leases.handovers} hand-overs)`,
  )
  for (const w of workers) w.kill('SIGKILL')
})
