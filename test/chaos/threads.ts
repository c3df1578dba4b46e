// Threads and outcomes under faults (issue 28): a few coordinator sessions delegate tagged bash runs to a member
// ("delegate <tag>": the coordinator's send runs a child whose message makes it run bash), and a few sessions work
// toward outcomes (graded slowly, the first pass asking for a revision), all through the run, so hosts die mid-child
// and mid-grader. At the end, from the stored histories: every send and every grader pass ended exactly once (one
// result per send, one end per pass span, none left open), never a second child for one send, no thread left running,
// and every child's model request spans closed.
import type Anthropic from '@anthropic-ai/sdk'

/** The driver's client name (its calls retry as a patient client's). */
export const THREADS_CLIENT = 'threads'

const COORDINATORS = 3
const OUTCOMES = 3
/** A turn's wait for its idle before the driver moves on (it may be cut by a fault; the checks read what was stored). */
const TURN_MS = 40_000

export interface ThreadData {
  coordinators: number
  outcomes: number
  turns: { ok: number; failed: number }
  /** What the histories break, one line each (empty: every guarantee held). */
  sends: string[]
  children: string[]
  passes: string[]
  running: string[]
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

async function history(client: Anthropic, session: string, thread?: string): Promise<any[]> {
  const out: any[] = []
  const pages = thread
    ? client.beta.sessions.threads.events.list(thread, { session_id: session, limit: 1000 } as any)
    : client.beta.sessions.events.list(session, { limit: 1000 } as any)
  for await (const e of pages) out.push(e)
  return out
}

export class ThreadChurn {
  private readonly coordinators: string[] = []
  private readonly outcomes: string[] = []
  private readonly turns = { ok: 0, failed: 0 }

  constructor(private readonly client: Anthropic) {}

  async start(environment: string, runId: string): Promise<void> {
    const c = this.client
    const member = await c.beta.agents.create({ name: 'chaos member', model: 'claude-sonnet-4-5', tools: [{ type: 'agent_toolset_20260401' }] } as any)
    const lead = await c.beta.agents.create({
      name: 'chaos coordinator',
      model: 'claude-sonnet-4-5',
      multiagent: { type: 'coordinator', agents: [member.id] },
    } as any)
    const writer = await c.beta.agents.create({ name: 'chaos writer', model: 'claude-sonnet-4-5' } as any)
    for (let i = 0; i < COORDINATORS; i++) this.coordinators.push((await c.beta.sessions.create({ agent: lead.id, environment_id: environment } as any)).id)
    for (let i = 0; i < OUTCOMES; i++) this.outcomes.push((await c.beta.sessions.create({ agent: writer.id, environment_id: environment } as any)).id)
    this.runId = runId
  }

  private runId = ''

  /** Turns on every session until `endAt`, one at a time per session. */
  async run(endAt: number): Promise<void> {
    const one = async (session: string, outcome: boolean) => {
      for (let n = 0; Date.now() < endAt; n++) {
        const tag = `${this.runId}-${session.slice(-6)}-${n}`
        const event = outcome
          ? { type: 'user.define_outcome', description: `finish ${tag}`, rubric: { type: 'text', content: 'done when revised once' } }
          : { type: 'user.message', content: [{ type: 'text', text: `delegate ${tag}` }] }
        if (await this.turn(session, event, tag)) this.turns.ok++
        else this.turns.failed++
      }
    }
    await Promise.all([...this.coordinators.map((s) => one(s, false)), ...this.outcomes.map((s) => one(s, true))])
  }

  /** One turn: the event sent, then the session polled until idle (true) or the wait is over (false). */
  private async turn(session: string, event: object, key: string): Promise<boolean> {
    const deadline = Date.now() + TURN_MS
    try {
      // Keyed: a send whose write got no answer (a NATS election) is retried, not refused as a 504.
      await this.client.beta.sessions.events.send(session, { events: [event] } as any, { headers: { 'Idempotency-Key': key } })
    } catch {
      await sleep(1000)
      return false
    }
    while (Date.now() < deadline) {
      await sleep(500)
      const s = await this.client.beta.sessions.retrieve(session).catch(() => undefined)
      if (s?.status === 'idle') return true
    }
    return false
  }

  /** Waits for every session to be idle, then reads what the guarantees are checked on. */
  async settle(client: Anthropic, say: (s: string) => void): Promise<ThreadData> {
    const all = [...this.coordinators, ...this.outcomes]
    const by = Date.now() + 60_000
    while (Date.now() < by) {
      const statuses = await Promise.all(
        all.map((s) =>
          client.beta.sessions.retrieve(s).then(
            (x) => x.status,
            () => 'unreachable',
          ),
        ),
      )
      if (statuses.every((s) => s === 'idle')) break
      await sleep(1000)
    }
    const d: ThreadData = { coordinators: 0, outcomes: 0, turns: this.turns, sends: [], children: [], passes: [], running: [] }
    for (const s of this.coordinators) {
      const events = await history(client, s)
      const sends = events.filter((e) => e.type === 'agent.tool_use' && e.name === 'send_to_agent')
      d.coordinators += sends.length
      for (const u of sends) {
        const results = events.filter((e) => e.type === 'agent.tool_result' && e.tool_use_id === u.id).length
        if (results !== 1) d.sends.push(`${s}: send ${u.id} has ${results} results`)
      }
      const created = events.filter((e) => e.type === 'session.thread_created').map((e) => e.session_thread_id)
      if (new Set(created).size !== created.length) d.children.push(`${s}: a thread created twice`)
      if (created.length > sends.length) d.children.push(`${s}: ${created.length} children for ${sends.length} sends`)
      const threads = (await client.beta.sessions.threads.list(s, { limit: 100 } as any)).data
      for (const t of threads) {
        if (t.status !== 'idle' && t.status !== 'terminated') d.running.push(`${s}: thread ${t.id} is ${t.status}`)
        if (!t.parent_thread_id) continue
        const own = await history(client, s, t.id)
        const starts = own.filter((e) => e.type === 'span.model_request_start').map((e) => e.id)
        const ends = new Set(own.filter((e) => e.type === 'span.model_request_end').map((e) => e.model_request_start_id))
        const open = starts.filter((id) => !ends.has(id))
        if (open.length) d.children.push(`${s}: thread ${t.id} left ${open.length} model request spans open`)
      }
    }
    for (const s of this.outcomes) {
      const events = await history(client, s)
      const starts = events.filter((e) => e.type === 'span.outcome_evaluation_start')
      d.outcomes += starts.length
      for (const st of starts) {
        const ends = events.filter((e) => e.type === 'span.outcome_evaluation_end' && e.outcome_evaluation_start_id === st.id).length
        if (ends !== 1) d.passes.push(`${s}: pass ${st.id} ended ${ends} times`)
      }
      const session = await client.beta.sessions.retrieve(s)
      for (const o of session.outcome_evaluations as any[]) {
        if (o.result === 'running' || o.result === 'evaluating' || o.result === 'pending') d.running.push(`${s}: outcome ${o.outcome_id} is still ${o.result}`)
      }
    }
    say(`threads: ${d.coordinators} sends, ${d.outcomes} grader passes, ${this.turns.ok} turns (${this.turns.failed} cut or refused)`)
    return d
  }
}
