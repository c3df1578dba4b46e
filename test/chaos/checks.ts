// The checks, each a pure function of what the run recorded and what it read back afterwards. A check returns a
// one-line summary and the evidence (capped) that a failure needs to be chased in the logs.
import type { History, TagLine } from './history.js'
import { HOST_LOST, IN_FLIGHT_END_MS, type InFlightCheck } from './sandbox-kills.js'
import type { SandboxKill } from './sandboxes.js'
import type { ScheduleData } from './schedules.js'
import { toolResults, type TurnOutcome } from './turn.js'
import type { UploadCheck } from './uploads.js'
import { webhookChecks } from './webhook-checks.js'
import { MEMORY_CLIENT, type MemoryData } from './memories.js'
import { memoryProblems } from './memory-checks.js'
import { type McpData, mcpProblems, mcpSummary } from './mcp.js'
import { SKILLS_CLIENT, type SkillData } from './skills.js'
import { THREADS_CLIENT, type ThreadData } from './threads.js'
import type { WebhookData } from './webhooks.js'
import type { WorkerData } from './workers.js'
import type { ProbeCheck } from './workspaces.js'
import {
  CONNECT_FAILED,
  TIMED_OUT,
  type Attempt,
  type CallRecord,
  type FaultKind,
  type FaultWindow,
  type HostStart,
  type PostRecord,
  type ReaderRecord,
  type TurnRecord,
} from './types.js'

export interface RunData {
  sessions: string[]
  loadStart: number
  loadEnd: number
  windows: FaultWindow[]
  attempts: Attempt[]
  posts: PostRecord[]
  calls: CallRecord[]
  turns: TurnRecord[]
  readers: ReaderRecord[]
  histories: Map<string, History>
  tags: Map<string, TagLine[]>
  /** Each session's status once the settle wait ended. */
  settled: Map<string, string>
  hostStarts: HostStart[]
  /** The deployments fired while orchestrators were killed (schedules.ts). */
  schedules: ScheduleData
  /** Each session's workspace `tags.log`, read back by a bash call after the load (or why not). */
  workspaceTags: Map<string, TurnOutcome>
  /** Per host SIGKILL: what ran under the host, and what of it outlived it. */
  sandboxKills: SandboxKill[]
  /** Per host SIGKILL: the probe sessions it held, reading their workspace back on the hosts that took them over. */
  probeChecks: ProbeCheck[]
  /** Per host SIGKILL: the uploads streaming into it. */
  uploads: UploadCheck[]
  /** Per sandbox host SIGKILL (`--sandbox-hosts`): what ran under it, and what of it outlived it. */
  sandboxHostKills: SandboxKill[]
  /** Per sandbox host SIGKILL: the tool calls put in flight there just before it. */
  inFlight: InFlightCheck[]
  /** Every start of a sandbox host. */
  sandboxHostStarts: HostStart[]
  /** Webhook endpoints, what the receiver got and what the histories imply (absent with `--no-webhooks`). */
  webhooks?: WebhookData
  skills?: SkillData
  /** Memory stores written by API writers and sessions (memories.ts; absent where sessions cannot mount them). */
  memories?: MemoryData
  /** MCP sessions (mcp.ts; absent with --no-mcp). */
  mcp?: McpData
  threads?: ThreadData
  workers?: WorkerData
}

export interface CheckResult {
  name: string
  ok: boolean
  summary: string
  details: string[]
}

/** After a fault recovers, placement and client retries still settle for a moment: errors this late still count as its. */
export const GRACE_MS = 5_000
/** README: "when one dies, another host takes its actors over within three seconds". */
export const HOST_FAILOVER_MS = 3_000
/** Ours, not a documented promise: a JetStream leader election takes a few seconds, plus the restart. */
const NATS_FAILOVER_MS = 10_000
/**
 * Ours too, for a node stopped 10 s: nats-server 2.9 re-elects the leaders the silent node held within about 6 s,
 * but a follower that is catching up (the busy events stream, the meta group) does not campaign, so that leader
 * may only move once the node is back: the pause, plus an election and catching up. Seen (seed 14, nats-server
 * 2.9.10): KV writes refused for 10.5 s after the node came back, and the hosts serving again 0.3–0.7 s after the
 * first write that went through, 21.3 s after the fault; hence 25 s.
 */
const NATS_STOP_FAILOVER_MS = 25_000

const budgetOf = (kind: FaultKind) => (kind.startsWith('host') ? HOST_FAILOVER_MS : kind === 'nats-stop' ? NATS_STOP_FAILOVER_MS : NATS_FAILOVER_MS)
/** The brief's bar for a restarted host. */
const READY_AFTER_NATS_MS = 3_000
const MAX_DETAILS = 12

const capped = (xs: string[]) => (xs.length > MAX_DETAILS ? [...xs.slice(0, MAX_DETAILS), `… and ${xs.length - MAX_DETAILS} more`] : xs)

/**
 * Whether [t0, t1] overlaps a fault window (plus its grace) that may excuse an API error or a turn cut short. A sandbox
 * host SIGKILL excuses none (the sessions keep their actors, and a tool call cut off there ends with an error result)
 * unless `sandboxKills`: an attempt that timed out may be, as its restart competes for the run's one machine.
 */
export function inFault(windows: FaultWindow[], t0: number, t1 = t0, sandboxKills = false): FaultWindow | undefined {
  return windows.find((w) => (sandboxKills || w.kind !== 'sandbox-kill') && t1 >= w.start && t0 <= w.end + GRACE_MS)
}

const eventsOf = (h: History | undefined): any[] | undefined => (h && 'events' in h ? h.events : undefined)
const textOf = (e: any): string => (Array.isArray(e?.content) ? e.content.map((c: any) => c?.text ?? '').join(' ') : '')
const keyOf = (e: any): string | undefined => /key=(\S+)/.exec(textOf(e))?.[1]
const rel = (d: RunData, t: number) => `${((t - d.loadStart) / 1000).toFixed(1)} s`

function check(name: string, problems: string[], okSummary: string, failSummary = `${problems.length} problem(s)`): CheckResult {
  return { name, ok: problems.length === 0, summary: problems.length ? failSummary : okSummary, details: capped(problems) }
}

export function historiesReadable(d: RunData): CheckResult {
  const problems = [...d.histories].filter(([, h]) => 'error' in h).map(([s, h]) => `${s}: ${(h as { error: string }).error}`)
  return check('every history can be read back', problems, `${d.histories.size} histories read`)
}

/** Every event id an acknowledged POST returned is stored once; no id is stored twice. */
export function acknowledgedStoredOnce(d: RunData): CheckResult {
  const problems: string[] = []
  let acked = 0
  for (const [s, h] of d.histories) {
    const ids = new Map<string, number>()
    for (const e of eventsOf(h) ?? []) ids.set(e.id, (ids.get(e.id) ?? 0) + 1)
    for (const [id, n] of ids) if (n > 1) problems.push(`${s}: event ${id} stored ${n} times`)
  }
  for (const p of d.posts) {
    if (!p.ok) continue
    const events = eventsOf(d.histories.get(p.session))
    if (!events) continue
    for (const id of p.ids) {
      acked++
      const n = events.filter((e) => e.id === id).length
      if (n !== 1) problems.push(`${p.session}: ${p.kind} ${id} (key ${p.key}, acknowledged at ${rel(d, p.doneAt)}) is in the history ${n} times`)
    }
  }
  return check('every acknowledged event is stored exactly once', problems, `${acked} acknowledged events, each stored once`)
}

/** One POST (one Idempotency-Key) is stored once, whatever the client's retries did. */
export function onePostOneCopy(d: RunData): CheckResult {
  const problems: string[] = []
  let checked = 0
  const bySession = new Map<string, PostRecord[]>()
  for (const p of d.posts) bySession.set(p.session, [...(bySession.get(p.session) ?? []), p])
  for (const [s, posts] of bySession) {
    const events = eventsOf(d.histories.get(s))
    if (!events) continue
    const copies = new Map<string, string[]>()
    for (const e of events) {
      if (e.type !== 'user.message' && e.type !== 'user.custom_tool_result') continue
      const k = keyOf(e)
      if (k) copies.set(k, [...(copies.get(k) ?? []), e.id])
    }
    for (const p of posts) {
      if (p.kind === 'interrupt') continue
      checked++
      // A POST carries one event per key in practice (one message, or the results of one parked turn).
      const want = p.kind === 'message' ? 1 : Math.max(1, p.ids.length)
      const got = copies.get(p.key) ?? []
      if (got.length > want) {
        const attempts = d.attempts.filter((a) => a.key === p.key)
        problems.push(
          `${s}: ${p.kind} key ${p.key} stored ${got.length} times (${got.join(', ')}); acknowledged ${p.ok ? p.ids.join(',') : 'never'}; ` +
            `${attempts.length} attempts: ${attempts.map((a) => `${a.backend} ${a.status}@${rel(d, a.at)}${a.requestId ? ` ${a.requestId}` : ''}`).join(', ')}`,
        )
      }
      if (p.ok && got.length === 0) problems.push(`${s}: ${p.kind} key ${p.key} acknowledged but no stored event carries it`)
    }
    // Interrupts carry no text: their count must lie between the acknowledged ones and all that were attempted.
    const ints = posts.filter((p) => p.kind === 'interrupt')
    const stored = events.filter((e) => e.type === 'user.interrupt').length
    const acked = ints.filter((p) => p.ok).length
    checked += ints.length
    if (stored < acked || stored > ints.length) problems.push(`${s}: ${stored} user.interrupt stored for ${acked} acknowledged of ${ints.length} sent`)
  }
  return check('no POST is stored twice (one Idempotency-Key, one copy)', problems, `${checked} POSTs, none duplicated`)
}

/** Each reader saw its session's history, from where it started, exactly once and in order. */
export function readersSawEachEventOnce(d: RunData): CheckResult {
  const problems: string[] = []
  for (const r of d.readers) {
    const events = eventsOf(d.histories.get(r.session))
    if (!events) {
      problems.push(`${r.session}: history unreadable`)
      continue
    }
    const dup = r.ids.filter((id, i) => r.ids.indexOf(id) !== i)
    if (dup.length) problems.push(`${r.session}: ${dup.length} events seen twice, e.g. ${[...new Set(dup)].slice(0, 3).join(', ')} (${r.connects} connections)`)
    if (!r.ids.length) {
      if (events.length)
        problems.push(`${r.session}: saw nothing of ${events.length} stored events (${r.connects} connections; cuts: ${r.cuts.slice(-3).join('; ')})`)
      continue
    }
    const ids = events.map((e) => e.id)
    const from = ids.indexOf(r.ids[0]!)
    if (from < 0) {
      problems.push(`${r.session}: first event seen ${r.ids[0]} is not in the history`)
      continue
    }
    if (r.fromStart && from > 0)
      problems.push(`${r.session}: opened before the first POST but first saw event ${from} (${r.ids[0]}); missed ${ids.slice(0, from).join(', ')}`)
    const want = ids.slice(from)
    const seen = [...new Set(r.ids)]
    const i = want.findIndex((id, k) => seen[k] !== id)
    if (i >= 0 || seen.length !== want.length) {
      const at = i >= 0 ? i : Math.min(seen.length, want.length)
      const missing = want.filter((id) => !seen.includes(id))
      const extra = seen.filter((id) => !want.includes(id))
      problems.push(
        `${r.session}: diverges from the history at event ${from + at} (${want[at] ?? 'end'} ${events[from + at]?.type ?? ''} stored, ${seen[at] ?? 'nothing'} seen); ` +
          `${missing.length} missing${
            missing.length
              ? ` (${missing
                  .slice(0, 3)
                  .map((id) => `${id} ${events[ids.indexOf(id)].type}`)
                  .join(', ')})`
              : ''
          }, ` +
          `${extra.length} not stored; ${r.connects} connections`,
      )
    }
  }
  const reconnects = d.readers.reduce((n, r) => n + Math.max(0, r.connects - 1), 0)
  return check('every SSE reader saw each event once across reconnects', problems, `${d.readers.length} readers, ${reconnects} reconnects, no duplicate or gap`)
}

/** The bash files count executions: a tool use id twice means one tool call ran twice. */
export function builtinRanOnce(d: RunData): CheckResult {
  const problems: string[] = []
  let runs = 0
  for (const [s, lines] of d.tags) {
    runs += lines.length
    const n = new Map<string, number>()
    for (const l of lines) n.set(l.toolUseId, (n.get(l.toolUseId) ?? 0) + 1)
    for (const [id, c] of n) if (c > 1) problems.push(`${s}: tool use ${id} ran ${c} times (tag ${lines.find((l) => l.toolUseId === id)?.tag})`)
    const events = eventsOf(d.histories.get(s))
    if (!events) continue
    // A run must also answer for a result: an ok result with no run, or a run left without a stored use, is a lie.
    const uses = events.filter((e) => e.type === 'agent.tool_use' && e.name === 'bash')
    for (const u of uses) {
      const modelId = /toolu_[0-9A-Za-z]+/.exec(String(u.input?.command ?? ''))?.[0]
      const result = events.find((e) => e.type === 'agent.tool_result' && e.tool_use_id === u.id)
      const ran = modelId ? (n.get(modelId) ?? 0) : 0
      if (result && !result.is_error && ran !== 1) problems.push(`${s}: tool use ${u.id} (${modelId}) has an ok result but ran ${ran} times`)
    }
  }
  return check('no built-in tool ran twice', problems, `${runs} bash runs, each tool use at most once`)
}

/** Tags that ran under several tool uses: one user message answered twice (a duplicated POST or turn). */
export function tagsOnce(d: RunData): CheckResult {
  const problems: string[] = []
  for (const [s, lines] of d.tags) {
    const uses = new Map<string, Set<string>>()
    for (const l of lines) uses.set(l.tag, (uses.get(l.tag) ?? new Set()).add(l.toolUseId))
    for (const [tag, ids] of uses) if (ids.size > 1) problems.push(`${s}: tag ${tag} ran under ${ids.size} tool uses (${[...ids].join(', ')})`)
  }
  return check('each bash tag ran at most once (one turn per message)', problems, 'every tag ran at most once')
}

export function everyToolUseOneResult(d: RunData): CheckResult {
  const problems: string[] = []
  let uses = 0
  for (const [s, h] of d.histories) {
    const events = eventsOf(h)
    if (!events) continue
    for (const u of events.filter((e) => e.type === 'agent.tool_use')) {
      uses++
      const n = events.filter((e) => e.type === 'agent.tool_result' && e.tool_use_id === u.id).length
      if (n !== 1) problems.push(`${s}: agent.tool_use ${u.id} has ${n} agent.tool_result events`)
    }
    for (const u of events.filter((e) => e.type === 'agent.custom_tool_use')) {
      uses++
      const n = events.filter((e) => e.type === 'user.custom_tool_result' && e.custom_tool_use_id === u.id).length
      if (n > 1) problems.push(`${s}: agent.custom_tool_use ${u.id} has ${n} user.custom_tool_result events`)
    }
  }
  return check('every agent.tool_use has exactly one result', problems, `${uses} tool uses, each with one result`)
}

/** Stored client events that no turn ever took up: the session says idle, but the client's message went unanswered. */
export function everyEventHandled(d: RunData): CheckResult {
  const problems: string[] = []
  let n = 0
  for (const [s, h] of d.histories) {
    const events = eventsOf(h) ?? []
    events.forEach((e, i) => {
      if (!String(e.type).startsWith('user.')) return
      n++
      if (e.processed_at == null) {
        const after = events.slice(i + 1).map((x) => x.type)
        problems.push(
          `${s}: ${e.type} ${e.id}${keyOf(e) ? ` (key ${keyOf(e)})` : ''} never handled (processed_at null); after it: ${after.length ? after.join(', ') : 'nothing'}`,
        )
      }
    })
  }
  return check('every stored client event was handled by the end', problems, `${n} client events, all handled`)
}

export function noneStuck(d: RunData): CheckResult {
  const problems = [...d.settled].filter(([, st]) => st !== 'idle').map(([s, st]) => `${s}: ${st}`)
  return check('no session stuck 30 s after the load ended', problems, `${d.settled.size} sessions idle`, `${problems.length} not idle`)
}

/** 5xx only as 503 with retry-after-ms, only inside a fault window; no connection failure outside one. */
export function serverErrors(d: RunData): CheckResult {
  // Grouped by kind and message: a fault can yield a hundred of one error, and the kinds are what matter.
  const groups = new Map<string, string[]>()
  const add = (kind: string, a: Attempt) => {
    const msg = /"message":"([^"]*)"/.exec(a.error ?? '')?.[1] ?? a.error ?? ''
    const key = `${kind}${msg ? `: ${msg.slice(0, 100)}` : ''}`
    groups.set(key, [...(groups.get(key) ?? []), `${rel(d, a.at)} ${a.method} ${a.path} via ${a.backend} (${a.client})${a.requestId ? ` ${a.requestId}` : ''}`])
  }
  for (const a of d.attempts) {
    const w = inFault(d.windows, a.at, a.at + a.ms)
    if (a.status >= 500) {
      if (a.status !== 503 || !a.retryAfterMs) add(`${a.status}${a.retryAfterMs ? '' : ' without retry-after-ms'}`, a)
      else if (!w) add('503 outside any fault window', a)
    } else if ((a.status === CONNECT_FAILED || a.status === TIMED_OUT) && !inFault(d.windows, a.at, a.at + a.ms, true)) {
      add(`${a.status === TIMED_OUT ? 'timeout' : 'connection failed'} outside any fault window`, a)
    }
  }
  const problems: string[] = []
  for (const [key, where] of groups) {
    problems.push(`${where.length} × ${key}`)
    for (const w of where.slice(0, 3)) problems.push(`    e.g. ${w}`)
  }
  const n503 = d.attempts.filter((a) => a.status === 503).length
  const bad = [...groups.values()].reduce((n, g) => n + g.length, 0)
  const summary = bad ? `${bad} attempts in ${groups.size} kinds` : n503 ? `${n503} 503s, all inside fault windows` : 'no 5xx'
  return { name: '5xx only as 503 + retry-after-ms inside fault windows', ok: bad === 0, summary, details: problems.slice(0, 40) }
}

/** Looking up an upload cut off by a kill finds nothing: that 404 is the answer the check wants. */
export const UPLOAD_CHECK_CLIENT = 'uploads'

export function noClientErrors(d: RunData): CheckResult {
  const problems = d.attempts
    .filter(
      (a) =>
        a.status >= 400 &&
        a.status < 500 &&
        !(a.client === UPLOAD_CHECK_CLIENT && a.status === 404) &&
        !(a.client === SKILLS_CLIENT && a.status === 404 && a.method === 'DELETE') &&
        // An outcome still open after a turn cut by a fault refuses the next one: the driver expects it.
        !(a.client === THREADS_CLIENT && a.status === 409) &&
        // A precondition race's loser (or an update that lost its base to another writer) is refused 409 by design.
        !(a.client === MEMORY_CLIENT && a.status === 409),
    )
    .map((a) => `${a.status} at ${rel(d, a.at)} ${a.method} ${a.path} via ${a.backend}${a.key ? ` key ${a.key}` : ''}${a.requestId ? ` ${a.requestId}` : ''}`)
  return check('no 4xx (the driver sends only valid requests)', problems, 'none')
}

/**
 * A POST the client gave up on is acceptable only when every attempt was refused the way a fault may refuse: a 503
 * with retry-after-ms (or no connection, or no answer) inside a fault window. That is the issue's rule for 5xx; a
 * NATS fault can keep the store unavailable for longer than a client's retries (a raft election on nats-server
 * 2.9 took 14 s), and such a client must retry later, which is safe with its Idempotency-Key.
 */
function excusedPost(d: RunData, p: PostRecord): boolean {
  const tries = d.attempts.filter((a) => a.key === p.key)
  return (
    tries.length > 0 &&
    tries.every(
      (a) => ((a.status === 503 && !!a.retryAfterMs) || a.status === CONNECT_FAILED || a.status === TIMED_OUT) && !!inFault(d.windows, a.at, a.at + a.ms),
    )
  )
}

export function postsSucceeded(d: RunData): CheckResult {
  const failed = d.posts.filter((p) => !p.ok)
  const excused = failed.filter((p) => excusedPost(d, p))
  const problems = failed
    .filter((p) => !excused.includes(p))
    .map((p) => `${p.session}: ${p.kind} key ${p.key} at ${rel(d, p.at)} failed after retries: ${p.error}`)
  const note = excused.length ? `; ${excused.length} gave up inside fault windows on 503s only` : ''
  return check(
    'every POST acknowledged within the client retries (or refused only with 503s inside a fault)',
    problems,
    `${d.posts.length - failed.length} of ${d.posts.length} POSTs acknowledged${note}`,
  )
}

export function turnsFinished(d: RunData): CheckResult {
  const unfinished = d.turns.filter((t) => t.outcome !== 'done')
  // A turn cut short by a POST given up inside a fault, or that could not finish while a fault lasted; a session
  // left stuck by either is caught by the check on stuck sessions.
  const excused = unfinished.filter((t) =>
    t.outcome === 'timeout'
      ? !!inFault(d.windows, t.start, t.end)
      : d.posts.some((p) => !p.ok && p.key.includes(`.${t.tag}.`) && p.session === t.session && excusedPost(d, p)),
  )
  const problems = unfinished
    .filter((t) => !excused.includes(t))
    .map((t) => `${t.session}: ${t.kind} turn ${t.tag} from ${rel(d, t.start)}: ${t.outcome}${t.error ? ` (${t.error})` : ''}`)
  const note = excused.length ? `; ${excused.length} cut short by a fault` : ''
  return check(
    'every turn went idle within 30 s (unless a fault cut it short)',
    problems,
    `${d.turns.length - unfinished.length} of ${d.turns.length} turns${note}`,
  )
}

const FAILOVER_GROUPS: Array<{ label: string; kinds: FaultKind[]; budgetMs: number }> = [
  { label: 'SIGKILL host (write)', kinds: ['host-kill'], budgetMs: HOST_FAILOVER_MS },
  { label: 'SIGSTOP host', kinds: ['host-stop'], budgetMs: HOST_FAILOVER_MS },
  { label: 'NATS leader loss', kinds: ['nats-leader', 'stream-leader'], budgetMs: NATS_FAILOVER_MS },
  { label: 'NATS node stopped', kinds: ['nats-stop'], budgetMs: NATS_STOP_FAILOVER_MS },
]

export interface FailoverStat {
  label: string
  budgetMs: number
  faults: number
  probes: number
  p50?: number
  max?: number
  never: number
}

export function failoverStats(d: RunData): FailoverStat[] {
  return FAILOVER_GROUPS.map((g) => {
    const ws = d.windows.filter((w) => g.kinds.includes(w.kind))
    const probes = ws.flatMap((w) => w.probes)
    const ms = probes.map((p) => p.firstOkMs).filter((x): x is number => x !== undefined)
    return {
      label: g.label,
      budgetMs: g.budgetMs,
      faults: ws.length,
      probes: probes.length,
      p50: percentile(ms, 50),
      max: ms.length ? Math.max(...ms) : undefined,
      never: probes.length - ms.length,
    }
  })
}

export function failover(d: RunData): CheckResult {
  const problems: string[] = []
  for (const s of failoverStats(d)) {
    if (s.never) problems.push(`${s.label}: ${s.never} of ${s.probes} probed sessions never answered within the probe bound`)
    if (s.max !== undefined && s.max > s.budgetMs) problems.push(`${s.label}: slowest session answered ${s.max} ms after the fault (budget ${s.budgetMs} ms)`)
  }
  for (const w of d.windows) {
    const slow = w.probes.filter((p) => p.firstOkMs === undefined || p.firstOkMs > budgetOf(w.kind))
    if (slow.length) problems.push(`  ${w.kind} ${w.target} at ${rel(d, w.start)}: ${slow.map((p) => `${p.session} ${p.firstOkMs ?? 'never'}`).join(', ')}`)
  }
  return check('failover: sessions of a faulted host (or all, for NATS) answer again within budget', problems, 'within budget')
}

/** One host SIGKILL: how soon every session it owned answered a write, by each measure (ms after the signal). */
export interface KillStat {
  window: FaultWindow
  sessions: number
  client: { p50?: number; max?: number; never: number }
  raw: { p50?: number; max?: number; never: number }
}

const spread = (xs: Array<number | undefined>) => {
  const ms = xs.filter((x): x is number => x !== undefined)
  return { p50: percentile(ms, 50), max: ms.length ? Math.max(...ms) : undefined, never: xs.length - ms.length }
}

export function killStats(d: RunData): KillStat[] {
  return d.windows
    .filter((w) => w.kind === 'host-kill')
    .map((w) => ({
      window: w,
      sessions: w.probes.length,
      client: spread(w.probes.map((p) => p.clientMs)),
      raw: spread(w.probes.map((p) => p.firstOkMs)),
    }))
}

/**
 * The README's promise, as a user sees it: from the SIGKILL of a host until every session it owned answers a write,
 * through the official client's own retries, under HOST_FAILOVER_MS for every kill.
 */
export function killFailover(d: RunData): CheckResult {
  const problems: string[] = []
  for (const k of killStats(d)) {
    const w = k.window
    const slow = w.probes.filter((p) => p.clientMs === undefined || p.clientMs >= HOST_FAILOVER_MS)
    if (slow.length)
      problems.push(
        `${w.target} at ${rel(d, w.start)}: ${slow.length} of ${k.sessions} sessions answered a write at or past ${HOST_FAILOVER_MS} ms: ` +
          slow.map((p) => `${p.session} ${p.clientMs ?? 'never'} (raw ${p.firstOkMs ?? 'never'})`).join(', '),
      )
  }
  const kills = killStats(d)
  const maxes = kills.map((k) => k.client.max).filter((x): x is number => x !== undefined)
  return check(
    `host SIGKILL: every session of the killed host answers a write within ${HOST_FAILOVER_MS / 1000} s (official client, retrying)`,
    problems,
    !kills.length ? 'no host SIGKILL in this run' : `${kills.length} kill(s), slowest session ${maxes.length ? `${Math.max(...maxes)} ms` : 'never'}`,
  )
}

export function restartReadiness(d: RunData): CheckResult {
  const problems: string[] = []
  for (const s of d.hostStarts.filter((x) => x.restart)) {
    const from = s.natsAt ?? s.blockAt
    if (s.error || s.readyAt === undefined || from === undefined) problems.push(`${s.host} restart at ${rel(d, s.spawnAt)}: ${s.error ?? 'never ready'}`)
    else if (s.readyAt - from > READY_AFTER_NATS_MS) {
      problems.push(
        `${s.host} restart at ${rel(d, s.spawnAt)}: ready ${s.readyAt - from} ms after its NATS connection${s.natsAt ? '' : ' (start-up block: connection time not found)'}`,
      )
    }
  }
  const n = d.hostStarts.filter((x) => x.restart).length
  return check('a restarted host is ready within 3 s of its NATS connection', problems, `${n} restart(s) checked`)
}

const MINUTE = 60_000

/**
 * With two `troupe orchestrate` processes (one SIGKILLed every few seconds) and the hosts under faults, every schedule
 * occurrence of the run made exactly one run and one session: per deployment, runs at every minute from its first
 * occurrence through the end of the load, none twice, each with a session that exists and names the deployment.
 */
export function scheduleOccurrences(d: RunData): CheckResult {
  const s = d.schedules
  const problems: string[] = []
  const lastDue = Math.floor(s.endClock / MINUTE) * MINUTE - MINUTE
  const iso = (at: number) => new Date(at).toISOString()
  let runs = 0
  for (const dep of s.deployments) {
    const at = dep.runs.map((r) => r.at)
    runs += at.length
    const twice = at.filter((v, i) => i > 0 && v === at[i - 1])
    if (twice.length) problems.push(`${dep.id}: ${twice.length} occurrence(s) with two runs (${twice.slice(0, 3).map(iso).join(', ')})`)
    const missing: number[] = []
    const seen = new Set(at)
    for (let m = dep.first; m <= Math.max(lastDue, at.at(-1) ?? 0); m += MINUTE) if (!seen.has(m)) missing.push(m)
    if (missing.length) problems.push(`${dep.id}: ${missing.length} occurrence(s) without a run (${missing.slice(0, 3).map(iso).join(', ')})`)
    for (const r of dep.runs) {
      if (r.error || !r.sessionFound)
        problems.push(`${dep.id} ${r.id} at ${iso(r.at)}: ${r.error ? `error ${r.error}` : `session ${r.session ?? 'none'} not found`}`)
    }
  }
  return check(
    'every schedule occurrence yields exactly one run and one session, none lost (two orchestrators, one SIGKILLed every few seconds)',
    problems,
    `${s.deployments.length} deployments, ${runs} runs through ${iso(lastDue)}, ${s.kills} orchestrator kill(s)`,
  )
}

/**
 * What the workspace held is there wherever the session moved: its tags.log, read back after the load, holds the line of
 * every bash run whose result was ok, once, in the order they ran. A run whose result is an error (cut off by a move)
 * may have left its line or not; a line no stored tool use accounts for is a problem.
 */
export function workspaceKeptEveryTag(d: RunData): CheckResult {
  const problems: string[] = []
  let lines = 0
  for (const s of d.sessions) {
    const events = eventsOf(d.histories.get(s))
    if (!events) continue
    const read = d.workspaceTags.get(s)
    if (!read || 'error' in read) {
      problems.push(`${s}: the workspace could not be read back: ${read?.error ?? 'not tried'}`)
      continue
    }
    const [r] = toolResults(read.events)
    if (!r || (r.isError && !/No such file/.test(r.text))) {
      problems.push(`${s}: reading tags.log failed: ${r?.text.slice(0, 200) ?? 'no tool result'}`)
      continue
    }
    const found = (r.isError ? '' : r.text)
      .split('\n')
      .map((l) => /^(\S+) (toolu_\S+)$/.exec(l.trim())?.[2])
      .filter((x): x is string => !!x)
    lines += found.length
    const ok: string[] = []
    const errored = new Set<string>()
    for (const u of events.filter((e) => e.type === 'agent.tool_use' && e.name === 'bash')) {
      const id = /toolu_[0-9A-Za-z]+/.exec(String(u.input?.command ?? ''))?.[0]
      const result = events.find((e) => e.type === 'agent.tool_result' && e.tool_use_id === u.id)
      if (!id || !result) continue
      if (result.is_error) errored.add(id)
      else ok.push(id)
    }
    const missing = ok.filter((id) => !found.includes(id))
    const twice = found.filter((id, i) => found.indexOf(id) !== i)
    const unknown = found.filter((id) => !ok.includes(id) && !errored.has(id))
    const order = found.filter((id) => ok.includes(id))
    const outOfOrder = order.some((id, i) => i > 0 && ok.indexOf(id) < ok.indexOf(order[i - 1]!))
    if (missing.length)
      problems.push(`${s}: ${missing.length} of ${ok.length} ok bash runs missing from the workspace (e.g. ${missing.slice(0, 3).join(', ')})`)
    if (twice.length) problems.push(`${s}: lines twice in the workspace: ${twice.slice(0, 3).join(', ')}`)
    if (unknown.length) problems.push(`${s}: lines no stored bash run accounts for: ${unknown.slice(0, 3).join(', ')}`)
    if (outOfOrder) problems.push(`${s}: the workspace's lines are out of order`)
  }
  return check(
    "each session's workspace holds every ok bash run's line after every move (read back by a bash call after the load)",
    problems,
    `${d.workspaceTags.size} workspaces, ${lines} lines, none missing`,
  )
}

/** What a set of kills left running, as problems, and a summary of what they ended. */
function leftRunning(kills: SandboxKill[]): { problems: string[]; summary: string } {
  const problems = kills.filter((k) => k.survivors.length).map((k) => `${k.host}: ${k.survivors.length} left running: ${k.survivors.slice(0, 5).join(', ')}`)
  const procs = kills.reduce((n, k) => n + k.processes, 0)
  const sandboxes = kills.reduce((n, k) => n + k.sandboxes, 0)
  const slowest = Math.max(0, ...kills.map((k) => k.goneMs ?? 0))
  return {
    problems,
    summary: `${kills.length} kill(s): ${sandboxes} sandboxes, ${procs} processes in all, every one gone ${slowest} ms after its host's exit was seen`,
  }
}

/** A host SIGKILL leaves no process it ran (sandboxes: bwrap and all under it) running. */
export function sandboxesDieWithHost(d: RunData): CheckResult {
  const { problems, summary } = leftRunning(d.sandboxKills)
  return check(
    'a SIGKILLed host leaves no sandbox process behind (each dies with its parent)',
    problems,
    d.sandboxKills.length ? summary : 'no host SIGKILL in this run',
  )
}

/** A session taken over after a SIGKILL gets a working sandbox on its new host, with what its workspace held. */
export function workspacesFollowSessions(d: RunData): CheckResult {
  const checks = d.probeChecks.filter((c) => c.kind === 'host')
  const problems = checks
    .filter((c) => !c.ok || c.owner === c.victimId)
    .map(
      (c) =>
        `${c.session} (held by ${c.victim}): ${c.ok ? `read back on the killed host itself` : 'token not read back'} after ${c.attempts} attempt(s): ${c.detail}`,
    )
  const restored = checks.filter((c) => c.restored).length
  return check(
    'a session taken over from a SIGKILLed host has a working sandbox on its new host, and its workspace',
    problems,
    checks.length
      ? `${checks.length} probe session(s) read their workspace back on the host that took them over, ${restored} of them restored from the store there (the others on a host whose copy was current)`
      : 'no probe session on a killed host in this run',
  )
}

/** An upload in flight at a host SIGKILL is stored whole or not at all; an acknowledged one is whole. */
export function uploadsWholeOrAbsent(d: RunData): CheckResult {
  const problems = d.uploads
    .filter((u) => u.outcome === 'partial' || u.outcome === 'unknown' || (u.answer === 200 && u.outcome !== 'whole'))
    .map((u) => `${u.host} ${u.id} (${u.size} bytes, ${u.sentAtKill} sent at the kill, answer ${u.answer}): ${u.outcome}: ${u.detail}`)
  const whole = d.uploads.filter((u) => u.outcome === 'whole').length
  const absent = d.uploads.filter((u) => u.outcome === 'absent').length
  return check(
    'an upload in flight at a host SIGKILL is whole (exact bytes) or absent (404, not listed), never partial',
    problems,
    d.uploads.length ? `${d.uploads.length} uploads into killed hosts: ${whole} whole, ${absent} absent` : 'no host SIGKILL in this run',
  )
}

/** A sandbox host SIGKILL leaves no process of its sandboxes running (bwrap dies with its parent), and it starts again. */
export function sandboxHostsLeaveNothing(d: RunData): CheckResult {
  const { problems, summary } = leftRunning(d.sandboxHostKills)
  for (const s of d.sandboxHostStarts.filter((x) => x.restart && x.error)) problems.push(`${s.host} restart at ${rel(d, s.spawnAt)}: ${s.error}`)
  return check(
    'a SIGKILLed sandbox host leaves no process of its sandboxes behind (each dies with its parent), and starts again',
    problems,
    d.sandboxHostKills.length ? summary : 'no sandbox host SIGKILL in this run',
  )
}

/**
 * A tool call in flight when its sandbox host died ends with an error result saying so, its turn within
 * IN_FLIGHT_END_MS (never hung); whether tools work afterwards is the workspace check's next tool.
 */
export function inFlightCallsEnd(d: RunData): CheckResult {
  const judged = d.inFlight.filter((c) => c.onVictim)
  const problems = judged
    .filter((c) => !c.ok || c.endedMs === undefined || c.endedMs > IN_FLIGHT_END_MS)
    .map((c) => `${c.session} on ${c.victim}: ${c.ok ? `ended ${c.endedMs} ms after the kill` : 'no error result saying the host was lost'}: ${c.detail}`)
  const elsewhere = d.inFlight.length - judged.length
  const slowest = Math.max(0, ...judged.map((c) => c.endedMs ?? 0))
  return check(
    `a tool call in flight at its sandbox host's SIGKILL ends with an error result, its turn within ${IN_FLIGHT_END_MS / 1000} s`,
    problems,
    d.inFlight.length
      ? `${judged.length} call(s) cut off, each an error result, turns over within ${slowest} ms${elsewhere ? `; ${elsewhere} not on the killed host (not judged)` : ''}`
      : 'no call in flight at a sandbox host SIGKILL in this run',
  )
}

/** The probe sessions whose sandbox ran on a SIGKILLed sandbox host read their workspace back while it is down. */
export function workspacesSurviveSandboxHosts(d: RunData): CheckResult {
  const checks = d.probeChecks.filter((c) => c.kind === 'sandbox-host')
  const problems = checks
    .filter((c) => !c.ok)
    .map((c) => `${c.session} (sandbox on ${c.victim}): token not read back after ${c.attempts} attempt(s): ${c.detail}`)
  const restored = checks.filter((c) => c.restored).length
  const retried = checks.filter((c) => c.ok && c.attempts > 1).length
  return check(
    "a session whose sandbox host was SIGKILLed runs its next tools on another, with its last completed tool call's workspace",
    problems,
    checks.length
      ? `${checks.length} probe session(s) read their workspace back while the sandbox host was down, ${restored} restored from the store` +
          (retried ? `; ${retried} only at a later attempt (the first tool after the kill refused)` : '')
      : 'no probe session on a killed sandbox host in this run',
  )
}

/**
 * Tool results that gave their sandbox host up, by when: around a sandbox host SIGKILL (expected), inside another fault
 * window (NATS faults may starve keep-alives), or outside any (a host lost that was not: for the report, not a check).
 */
export function sandboxHostLosses(d: RunData): { kill: number; fault: number; outside: string[] } {
  const out = { kill: 0, fault: 0, outside: [] as string[] }
  for (const [s, h] of d.histories) {
    for (const e of eventsOf(h) ?? []) {
      if (e.type !== 'agent.tool_result' || !e.is_error || !HOST_LOST.test(textOf(e))) continue
      const at = Date.parse(e.processed_at ?? '')
      if (d.windows.some((w) => w.kind === 'sandbox-kill' && at >= w.start && at <= w.end + GRACE_MS)) out.kill++
      else if (inFault(d.windows, at)) out.fault++
      else out.outside.push(`${s} at ${rel(d, at)}: ${textOf(e).slice(0, 120)}`)
    }
  }
  return out
}

export function percentile(xs: number[], p: number): number | undefined {
  if (!xs.length) return undefined
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]
}

export function runChecks(d: RunData, faults: boolean, sandboxHosts = false): CheckResult[] {
  const out = [
    historiesReadable(d),
    acknowledgedStoredOnce(d),
    onePostOneCopy(d),
    readersSawEachEventOnce(d),
    builtinRanOnce(d),
    tagsOnce(d),
    everyToolUseOneResult(d),
    everyEventHandled(d),
    noneStuck(d),
    serverErrors(d),
    noClientErrors(d),
    postsSucceeded(d),
    turnsFinished(d),
    scheduleOccurrences(d),
    workspaceKeptEveryTag(d),
  ]
  if (faults) out.push(failover(d), killFailover(d), restartReadiness(d), sandboxesDieWithHost(d), workspacesFollowSessions(d), uploadsWholeOrAbsent(d))
  if (faults && sandboxHosts) out.push(sandboxHostsLeaveNothing(d), inFlightCallsEnd(d), workspacesSurviveSandboxHosts(d))
  if (d.webhooks) out.push(...webhookChecks(d.webhooks))
  if (d.skills) out.push(...skillChecks(d.skills))
  if (d.memories) out.push(...memoryChecks(d.memories))
  if (d.mcp) out.push(...mcpChecks(d.mcp))
  if (d.threads) out.push(...threadChecks(d.threads))
  if (d.workers) out.push(...workerChecks(d.workers))
  return out
}

/** Self-hosted sessions and SIGKILLed workers (workers.ts), from the server's answers. */
export function workerChecks(d: WorkerData): CheckResult[] {
  return [
    check('no two workers held one lease at once', d.overlaps, `${d.beats} beats accepted, ${d.handovers} hand-overs between workers`),
    check('every work item claimed and stopped', d.itemProblems, `${d.items} items, ${d.workers} workers, ${d.kills} SIGKILLed`),
    check('every parked tool use answered exactly once', d.answers, `${d.toolUses} tool uses`),
    check('no self-hosted session stuck', d.stuck, `${d.sessions} sessions, ${d.turns.ok} turns (${d.turns.failed} cut)`),
  ]
}

/** Threads and outcomes under faults (threads.ts): sends and grader passes end once, one child per send, nothing stuck. */
export function threadChecks(d: ThreadData): CheckResult[] {
  return [
    check('every send to a member answered exactly once', d.sends, `${d.coordinators} sends`),
    check('one child per send, every child request span closed', d.children, 'children checked'),
    check('every grader pass ended exactly once', d.passes, `${d.outcomes} passes`),
    check('no thread or outcome left running', d.running, `${d.turns.ok} turns`),
  ]
}

/** Skills under faults (skills.ts): every listed version whole; one object per listed version once sweeps have run. */
export function skillChecks(d: SkillData): CheckResult[] {
  return [
    check('every listed skill version downloads whole', d.broken, `${d.versions} versions, ${d.uploads.ok} uploads, ${d.deletes.ok} deletes`),
    check('skill bundles: nothing left behind by killed uploads and deletes', d.leftovers, 'one object per listed version'),
  ]
}

/** MCP sessions under faults (mcp.ts): no call run twice, every use answered once, no session stuck on a dead connection. */
export function mcpChecks(d: McpData): CheckResult[] {
  const p = mcpProblems(d)
  return [
    check('no MCP call ran twice', p.twice, `${d.calls.length} calls`),
    check('every MCP tool use answered once; an ok result from exactly one call; no call without its stored use', p.results, `${d.uses.length} uses`),
    check('no MCP session stuck on a dead connection', p.stuck, mcpSummary(d)),
  ]
}

/** Memory stores under faults (memories.ts, memory-checks.ts): versions as the writes' outcomes say, states their latest. */
export function memoryChecks(d: MemoryData): CheckResult[] {
  const p = memoryProblems(d)
  const acked = d.writes.filter((w) => w.outcome === 'acknowledged').length
  const races = d.writes.filter((w) => w.kind === 'race')
  return [
    check(
      'memories: every acknowledged write one version, none refused stored, none doubled',
      p.versions,
      `${acked} acknowledged writes, ${d.writes.filter((w) => w.outcome === 'unknown').length} of unknown outcome, ${d.versions.length} versions`,
    ),
    check("every memory's current state is its latest version", p.current, `${d.memories.length} memories`),
    check(
      'no memory precondition won twice',
      p.preconditions,
      `${races.length / 2} races, ${races.filter((w) => w.outcome === 'acknowledged').length} won, ${races.filter((w) => w.outcome === 'refused').length} refused`,
    ),
    check('memory versions name their writer (session_actor with its session, api_actor)', p.actors, 'all'),
  ]
}
