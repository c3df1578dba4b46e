// The load: one driver per session doing turns through the official client until the load ends. What each turn
// does comes from the session's own seeded stream; every POST carries an Idempotency-Key (also written into the
// event text, so the stored history shows which POST an event came from) and is recorded with what it acknowledged.
import path from 'node:path'
import type Anthropic from '@anthropic-ai/sdk'
import { substream } from './rng.js'
import type { CallRecord, PostRecord, TurnKind, TurnRecord } from './types.js'

export interface LoadOptions {
  client: Anthropic
  sessions: string[]
  seed: number
  /** Where a session's bash tool calls append their tags, as the tools see it (one file per session). */
  execLog: (session: string) => string
  /** Distinguishes this run's keys from any other run's. */
  runId: string
}

/** A turn that has not gone idle after this is recorded as timed out and the driver moves on. */
const TURN_BOUND_MS = 30_000
const POLL_MS = 250
/** Newest events read per poll: a turn stores far fewer. */
const POLL_PAGE = 50
/** Parked rounds answered per turn: the model asks for one custom tool per turn. */
const MAX_TOOL_ROUNDS = 3

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Where a session's bash tags go. */
export const tagFile = (tagDir: string, session: string) => path.join(tagDir, `${session}.log`)

export class Load {
  readonly posts: PostRecord[] = []
  readonly calls: CallRecord[] = []
  readonly turns: TurnRecord[] = []
  private stopAt = Infinity

  constructor(private readonly o: LoadOptions) {}

  /** Drives every session until `stop()`; each driver finishes the turn it is in (bounded). */
  async run(): Promise<void> {
    await Promise.all(this.o.sessions.map((s, i) => this.drive(s, i)))
  }

  /** No new turn starts after this. */
  stop(): void {
    this.stopAt = Date.now()
  }

  private async timed<T>(op: string, fn: () => Promise<T>): Promise<T> {
    const at = Date.now()
    const t0 = performance.now()
    try {
      const r = await fn()
      this.calls.push({ at, ms: performance.now() - t0, op, ok: true })
      return r
    } catch (err) {
      this.calls.push({ at, ms: performance.now() - t0, op, ok: false })
      throw err
    }
  }

  /** One logical POST (the client retries inside it); its record says what was acknowledged. */
  private async post(session: string, kind: PostRecord['kind'], events: unknown[], key: string): Promise<PostRecord> {
    const rec: PostRecord = { session, key, kind, at: Date.now(), doneAt: 0, ok: false, ids: [] }
    this.posts.push(rec)
    try {
      const res = await this.timed('events.send', () =>
        this.o.client.beta.sessions.events.send(session, { events } as any, { headers: { 'Idempotency-Key': key } }),
      )
      rec.ok = true
      rec.ids = (res.data ?? []).map((e: { id: string }) => e.id)
    } catch (err) {
      rec.error = (err as Error).message
    }
    rec.doneAt = Date.now()
    return rec
  }

  /**
   * Polls the newest events until the turn that `marker` (the last event we posted) started is over: the marker
   * is handled and nothing runs after it (the newest event is an idle, or the marker itself, which is how an
   * interrupt that found the session idle ends). Resolves the closing idle event, if any; undefined on timeout.
   */
  private async waitIdle(session: string, marker: string, deadline: number): Promise<{ idle?: any } | undefined> {
    while (Date.now() < deadline) {
      try {
        const page = await this.timed('events.list', () => this.o.client.beta.sessions.events.list(session, { order: 'desc', limit: POLL_PAGE } as any))
        const events = page.data as any[]
        const i = events.findIndex((e) => e.id === marker)
        if (i >= 0 && events[i].processed_at) {
          if (i === 0) return {}
          if (events[0].type === 'session.status_idle') return { idle: events[0] }
        }
      } catch {}
      await sleep(POLL_MS)
    }
    return undefined
  }

  private async drive(session: string, index: number): Promise<void> {
    const rng = substream(this.o.seed, `session#${index}`)
    const file = this.o.execLog(session)
    for (let turn = 0; Date.now() < this.stopAt; turn++) {
      // Drawn before anything can fail, so the same seed gives the same choices whatever happens.
      const kind = rng.weighted<TurnKind>({ bash: 6, custom: 2, interrupt: 2 })
      const interruptAfterMs = rng.int(200, 1500)
      const thinkMs = rng.int(50, 400)
      const tag = `s${index}t${turn}`
      const rec: TurnRecord = { session, kind, tag, start: Date.now(), end: 0, outcome: 'error' }
      this.turns.push(rec)
      const deadline = rec.start + TURN_BOUND_MS
      const key = `${this.o.runId}.${tag}.m`
      const text = kind === 'bash' ? `bash ${tag} ${file} key=${key}` : kind === 'custom' ? `custom ${tag} key=${key}` : `slow ${tag} key=${key}`
      const sent = await this.post(session, 'message', [{ type: 'user.message', content: [{ type: 'text', text }] }], key)
      let marker = sent.ids.at(-1)
      // The POST whose failure ended the turn early, if one did.
      let failed: PostRecord | undefined = marker ? undefined : sent
      if (marker && kind === 'interrupt') {
        await sleep(interruptAfterMs)
        marker = (await this.post(session, 'interrupt', [{ type: 'user.interrupt' }], `${this.o.runId}.${tag}.i`)).ids.at(-1) ?? marker
      }
      let waited = marker ? await this.waitIdle(session, marker, deadline) : undefined
      for (let round = 0; waited?.idle?.stop_reason?.type === 'requires_action' && round < MAX_TOOL_ROUNDS; round++) {
        const uses: string[] = waited.idle.stop_reason.event_ids ?? []
        const rkey = `${this.o.runId}.${tag}.r${round}`
        const results = uses.map((id) => ({
          type: 'user.custom_tool_result',
          custom_tool_use_id: id,
          content: [{ type: 'text', text: `result ${tag} key=${rkey}` }],
        }))
        const answered = await this.post(session, 'tool_result', results, rkey)
        const m = answered.ids.at(-1)
        if (!m) failed = answered
        waited = m ? await this.waitIdle(session, m, deadline) : undefined
      }
      rec.end = Date.now()
      rec.outcome = failed ? 'error' : waited ? 'done' : 'timeout'
      if (failed) rec.error = `${failed.kind} POST failed: ${failed.error}`
      await sleep(thinkMs)
    }
  }
}
