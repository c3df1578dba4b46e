// Self-hosted sessions under faults (issue 29): a self_hosted environment, a few sessions doing bash turns through
// it, and `--workers` of the official client's `work.worker()`, each in a process of its own (test/work/worker-proc.ts),
// talking to the live hosts straight (a file of their URLs, rewritten as hosts die and come back on new ports). A
// seeded few are SIGKILLed during the load, each replaced by a new worker a second later. At the end, from the
// server's answers (every accepted heartbeat, the items, the histories): no two workers held one lease at once, every
// item was claimed and stopped, every parked tool use answered exactly once, no session left stuck.
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdirSync, renameSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type Anthropic from '@anthropic-ai/sdk'
import { type Beat, leaseOverlaps, readBeats } from '../work/leases.js'
import { onCleanup } from './cleanup.js'
import type { Host } from './hosts.js'
import { substream } from './rng.js'

/** The driver's client name (its calls retry as a patient client's). */
export const WORKERS_CLIENT = 'workers'
/**
 * The lease the workers ask for: the server's default, what a user gets without asking; a killed worker's item is
 * taken again once it ends. The official client's worker retries a tool result it could not send for one lease TTL
 * only, then drops it while its lease keeper goes on beating, which leaves the tool use unanswered and the item held
 * for good: seen with 5 s leases across a meta leader's election (10 s) and with 30 s leases across a NATS node cut
 * off (the sessions on a host connected to it answered 503 for about 30 s).
 */
const TTL_S = 60
/** Self-hosted sessions doing turns (the workers share them). */
const MAX_SESSIONS = 10
/**
 * A turn's wait for its end before the driver moves on (a fault may cut it; the checks read what was stored). Its
 * next message would abandon a tool use still parked, which the checks then count as unanswered: under two NATS
 * faults back to back (a meta leader killed, then a node cut off: the store away for most of 50 s) a parked turn
 * waited 53 s for its worker, so the wait outlasts that.
 */
const TURN_MS = 90_000
/** After the load: sessions idle and every item stopped (workers stop theirs 3 s after the session went idle). */
const SETTLE_MS = 60_000
const WORKER_PROC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../work/worker-proc.ts')

export interface WorkerData {
  workers: number
  kills: number
  sessions: number
  turns: { ok: number; failed: number }
  beats: number
  items: number
  handovers: number
  toolUses: number
  /** What the server's answers break, one line each (empty: the guarantee held). */
  overlaps: string[]
  itemProblems: string[]
  answers: string[]
  stuck: string[]
  /** The self-hosted sessions' histories as read at the end (written to the logs, not printed). */
  histories: Record<string, unknown[]>
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

async function history(client: Anthropic, session: string): Promise<any[]> {
  const out: any[] = []
  for await (const e of client.beta.sessions.events.list(session, { limit: 1000 } as any)) out.push(e)
  return out
}

/** Turns a session ended: its end_turn idles, or -1 while its last status is anything else. */
function turnsEnded(events: any[]): number {
  const last = events.filter((e) => e.type.startsWith('session.status_')).at(-1)
  if (last && (last.type !== 'session.status_idle' || last.stop_reason?.type !== 'end_turn')) return -1
  return events.filter((e) => e.type === 'session.status_idle' && e.stop_reason?.type === 'end_turn').length
}

export class WorkerFleet {
  private readonly sessions: string[] = []
  private readonly procs = new Map<string, ChildProcess>()
  /** Every heartbeat the server accepted, as the workers printed them (saved as logs/beats.json). */
  readonly beats: Beat[] = []
  private readonly turns = { ok: 0, failed: 0 }
  private readonly urlFile: string
  private environment = ''
  private runId = ''
  private started = 0
  private kills = 0
  private urlTimer: NodeJS.Timeout | undefined

  constructor(
    private readonly client: Anthropic,
    private readonly opts: { count: number; sessions: number; seed: number; dir: string; hosts: readonly Host[] },
  ) {
    mkdirSync(opts.dir, { recursive: true })
    this.urlFile = path.join(opts.dir, 'hosts.txt')
  }

  async start(runId: string): Promise<void> {
    this.runId = runId
    const c = this.client
    const agent = await c.beta.agents.create({ name: 'chaos worker', model: 'claude-sonnet-4-5', tools: [{ type: 'agent_toolset_20260401' }] } as any)
    this.environment = (await c.beta.environments.create({ name: 'chaos self-hosted', config: { type: 'self_hosted' } } as any)).id
    for (let i = 0; i < Math.min(MAX_SESSIONS, this.opts.sessions); i++) {
      this.sessions.push((await c.beta.sessions.create({ agent: agent.id, environment_id: this.environment } as any)).id)
    }
    // The hosts that answer now, for the workers: written whole, then renamed, so a worker never reads half a list.
    let last = ''
    const write = () => {
      const urls = this.opts.hosts.filter((h) => h.state === 'up' && h.url).map((h) => h.url!)
      const text = urls.join('\n')
      if (text === last) return
      last = text
      writeFileSync(`${this.urlFile}.tmp`, text)
      renameSync(`${this.urlFile}.tmp`, this.urlFile)
    }
    write()
    this.urlTimer = setInterval(write, 200)
    onCleanup(() => clearInterval(this.urlTimer))
    for (let i = 0; i < this.opts.count; i++) this.spawnWorker()
  }

  private spawnWorker(): string {
    const id = `w${this.started++}`
    const workdir = path.join(this.opts.dir, id)
    mkdirSync(workdir, { recursive: true })
    const p = spawn(process.execPath, ['--import', 'tsx', WORKER_PROC, `@${this.urlFile}`, this.environment, id, workdir, String(TTL_S)], {
      stdio: ['ignore', 'pipe', 'ignore'],
    })
    onCleanup(() => p.kill('SIGKILL'))
    readBeats(p, this.beats)
    this.procs.set(id, p)
    return id
  }

  /** Turns on every session until `endAt`, one at a time per session, and the seeded worker kills meanwhile. */
  async run(endAt: number, say: (s: string) => void): Promise<void> {
    const one = async (session: string) => {
      for (let n = 0; Date.now() < endAt; n++) {
        if (await this.turn(session, `bash ${this.runId}-${session.slice(-6)}-${n} work.log`)) this.turns.ok++
        else this.turns.failed++
      }
    }
    await Promise.all([...this.sessions.map(one), this.killSome(endAt, say)])
  }

  /** About one worker in four SIGKILLed at seeded moments, preferably one holding an item; a new one a second later. */
  private async killSome(endAt: number, say: (s: string) => void): Promise<void> {
    const rng = substream(this.opts.seed, 'workers')
    const span = endAt - Date.now()
    const at = Array.from({ length: Math.ceil(this.opts.count / 4) }, () => Date.now() + span * (0.15 + 0.7 * rng.next())).sort((a, b) => a - b)
    for (const when of at) {
      await sleep(when - Date.now())
      const live = [...this.procs.keys()]
      if (!live.length) continue
      const holding = live.filter((w) => this.beats.some((b) => b.w === w && b.state === 'active' && b.t > Date.now() - TTL_S * 1000))
      const victim = rng.pick(holding.length ? holding : live)
      this.procs.get(victim)!.kill('SIGKILL')
      this.procs.delete(victim)
      this.kills++
      say(`worker ${victim} SIGKILLed${holding.includes(victim) ? ' holding an item' : ''}`)
      await sleep(1000)
      this.spawnWorker()
    }
  }

  /** One turn: the message sent, then the history read until one more turn ended (true) or the wait is over. */
  private async turn(session: string, text: string): Promise<boolean> {
    const deadline = Date.now() + TURN_MS
    const prior = await history(this.client, session).catch(() => undefined)
    if (!prior) {
      await sleep(1000)
      return false
    }
    const before = turnsEnded(prior)
    try {
      // Keyed: a send whose write got no answer (a NATS election) is retried, not refused as a 504.
      const key = text.split(' ')[1]!
      await this.client.beta.sessions.events.send(session, { events: [{ type: 'user.message', content: [{ type: 'text', text }] }] } as any, {
        headers: { 'Idempotency-Key': key },
      })
    } catch {
      await sleep(1000)
      return false
    }
    while (Date.now() < deadline) {
      await sleep(1000)
      const events = await history(this.client, session).catch(() => undefined)
      if (events && turnsEnded(events) > before) return true
    }
    return false
  }

  /** Waits for every session to end its turn and every item to stop, stops the workers, reads what is checked. */
  async settle(client: Anthropic, say: (s: string) => void): Promise<WorkerData> {
    const work = client.beta.environments.work
    const listItems = async () => {
      const all: any[] = []
      for await (const i of work.list(this.environment, { limit: 100 } as any)) all.push(i)
      return all
    }
    const by = Date.now() + SETTLE_MS
    let items: any[] = []
    let histories = new Map<string, any[]>()
    while (Date.now() < by) {
      histories = new Map(await Promise.all(this.sessions.map(async (s) => [s, await history(client, s).catch(() => [])] as const)))
      items = await listItems().catch(() => [])
      if ([...histories.values()].every((h) => turnsEnded(h) >= 0) && items.length && items.every((i) => i.state === 'stopped')) break
      await sleep(1000)
    }
    clearInterval(this.urlTimer)
    for (const p of this.procs.values()) p.kill('SIGKILL')
    this.procs.clear()

    const d: WorkerData = {
      workers: this.opts.count,
      kills: this.kills,
      sessions: this.sessions.length,
      turns: this.turns,
      beats: this.beats.length,
      items: items.length,
      handovers: 0,
      toolUses: 0,
      overlaps: [],
      itemProblems: [],
      answers: [],
      stuck: [],
      histories: Object.fromEntries(histories),
    }
    const leases = leaseOverlaps(this.beats)
    d.handovers = leases.handovers
    d.overlaps = leases.overlaps
    for (const i of items) {
      if (i.state !== 'stopped') d.itemProblems.push(`${i.id} (${i.data?.id}) is ${i.state}`)
      // The workers print each beat whose answer reached them; a beat the server accepted but whose answer came after
      // the client's cutoff (the worker then gives the item up) shows only in the item's own `started_at`.
      if (!leases.items.has(i.id) && !i.started_at) d.itemProblems.push(`${i.id} (${i.data?.id}) never claimed (no heartbeat accepted), ${i.state}`)
    }
    for (const [s, events] of histories) {
      const uses = events.filter((e) => e.type === 'agent.tool_use')
      d.toolUses += uses.length
      for (const u of uses) {
        const n = events.filter((e) => (e.type === 'user.tool_result' || e.type === 'agent.tool_result') && e.tool_use_id === u.id).length
        if (n !== 1) d.answers.push(`${s}: ${u.id} answered ${n} times`)
      }
      if (turnsEnded(events) < 0) {
        const last = events.filter((e) => e.type.startsWith('session.status_')).at(-1)
        d.stuck.push(`${s}: last status ${last?.type} ${last?.stop_reason?.type ?? ''}`)
      }
    }
    say(
      `workers: ${d.workers} (${d.kills} SIGKILLed), ${d.sessions} self-hosted sessions, ${this.turns.ok} turns (${this.turns.failed} cut), ` +
        `${d.toolUses} tool uses, ${d.items} items, ${d.beats} beats, ${d.handovers} hand-overs`,
    )
    return d
  }
}
