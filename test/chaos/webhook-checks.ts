// The webhook checks (issue 26), each a pure function of what the run recorded (webhooks.ts): every subscribed event
// delivered at least once (by `webhook-id`), each request signed and carrying the event it names, nothing for a
// disabled endpoint's disabled time, nothing long after an endpoint's deletion, and every attempt cut by an
// orchestrator's SIGKILL delivered afterwards.
import Anthropic from '@anthropic-ai/sdk'
import type { Received } from '../webhooks/_helpers.js'
import { IN_FLIGHT_MS, type WebhookData } from './webhooks.js'

export interface WebhookCheck {
  name: string
  ok: boolean
  summary: string
  details: string[]
}

const MAX_DETAILS = 12
const capped = (xs: string[]) => (xs.length > MAX_DETAILS ? [...xs.slice(0, MAX_DETAILS), `… and ${xs.length - MAX_DETAILS} more`] : xs)
const check = (name: string, problems: string[], okSummary: string): WebhookCheck => ({
  name,
  ok: problems.length === 0,
  summary: problems.length ? `${problems.length} problem(s)` : okSummary,
  details: capped(problems),
})
/** The receiver answers 200 to all but the held requests (never answered): answered is delivered. */
const ok2xx = (r: Received) => r.answered
const idOf = (r: Received) => r.headers['webhook-id'] ?? ''
const iso = (t: number | undefined) => (t === undefined ? '–' : new Date(t).toISOString())

/** The event ids answered 2xx on `path`. */
function delivered(w: WebhookData, path: string): Set<string> {
  return new Set(w.received.filter((r) => r.path === path && ok2xx(r)).map(idOf))
}

export function webhooksSettled(w: WebhookData): WebhookCheck {
  const problems = w.settledMs === undefined ? [`still pending when the wait ended: ${w.pending}`] : []
  for (const s of w.unreadable) problems.push(`${s}: history unreadable, its events unchecked`)
  if (!w.expected.length) problems.push('no event expected: nothing of the histories was found stored by the cut-off')
  return check(
    'webhooks: the fan-out and the deliveries pass everything stored (bounded wait)',
    problems,
    `settled ${((w.settledMs ?? 0) / 1000).toFixed(1)} s after the cut-off`,
  )
}

/**
 * (a) Every event the histories imply reaches each endpoint subscribed to it, at least once (deduplicated by
 * `webhook-id`): `/all` and `/some` (its types) all along; `/toggled` those that happened after it was enabled again
 * (a delivery still queued when it was disabled is dropped, by design); `/deleted` none required.
 */
export function everyEventDelivered(w: WebhookData): WebhookCheck {
  const problems: string[] = []
  const figures: string[] = []
  let redelivered = 0
  for (const e of w.endpoints) {
    if (e.path === '/deleted') continue
    const got = delivered(w, e.path)
    const from = e.path === '/toggled' ? w.enable.ackedAt : -Infinity
    if (from === undefined) {
      problems.push(`${e.path}: never enabled again (${w.enable.error ?? 'no answer'}), unchecked`)
      continue
    }
    let want = 0
    let seen = 0
    for (const x of w.expected) {
      if (!e.types.includes(x.type) || x.at < from) continue
      want++
      if (got.has(x.id)) seen++
      else problems.push(`${e.path}: ${x.type} ${x.id} of ${x.session} (created ${iso(x.at)}) never answered 2xx`)
    }
    figures.push(`${e.path} ${seen} of ${want} expected${e.path === '/toggled' ? ' (after its enable)' : ''}`)
    const ids = w.received.filter((r) => r.path === e.path).map(idOf)
    redelivered += ids.length - new Set(ids).size
  }
  const said = `${figures.join(', ')}; ${redelivered} repeated requests (at least once, deduplicated by webhook-id)`
  const c = check('webhooks: every subscribed event delivered at least once', problems, said)
  return problems.length ? { ...c, summary: `${c.summary}: ${said}` } : c
}

/**
 * Every request the receiver got is signed for its endpoint (the official client's `unwrap()`), its `webhook-id` is the
 * event's id, and the event is one the histories make, of a type the endpoint was subscribed to, with its stored time.
 */
export function deliveriesAreTheirEvents(w: WebhookData): WebhookCheck {
  const problems: string[] = []
  const at = new Map(w.expected.map((x) => [x.id, x.at]))
  for (const ep of w.endpoints) {
    const verifier = new Anthropic({ apiKey: 'x', webhookKey: ep.secret }) as any
    for (const r of w.received.filter((g) => g.path === ep.path)) {
      let e: any
      // Verified as the receiver would have when it got the request: the timestamp's 5-minute tolerance is measured
      // from now, and a long run checks minutes after its first deliveries.
      const now = Date.now
      try {
        Date.now = () => r.at
        e = verifier.beta.webhooks.unwrap(r.body, { headers: r.headers })
      } catch (err) {
        problems.push(`${ep.path}: request at ${iso(r.at)} not verified: ${(err as Error).message}`)
        continue
      } finally {
        Date.now = now
      }
      const known = w.known.get(e.id)
      if (idOf(r) !== e.id) problems.push(`${ep.path}: webhook-id ${idOf(r)} is not the event's id ${e.id}`)
      else if (!known) problems.push(`${ep.path}: ${e.data?.type} ${e.id} of ${e.data?.id} is no event of any stored history`)
      else if (known.type !== e.data.type || known.session !== e.data.id)
        problems.push(`${ep.path}: ${e.id} says ${e.data.type} of ${e.data.id}, the history makes it ${known.type} of ${known.session}`)
      else if (!ep.types.includes(e.data.type)) problems.push(`${ep.path}: got ${e.data.type} ${e.id}, not one of its types`)
      else if (at.has(e.id) && Date.parse(e.created_at) !== at.get(e.id))
        problems.push(`${ep.path}: ${e.id} created_at ${e.created_at}, stored at ${iso(at.get(e.id))}`)
    }
  }
  return check(
    'webhooks: each request signed, carrying an event of the histories its endpoint subscribed to',
    problems,
    `${w.received.length} requests verified`,
  )
}

/**
 * (b) Nothing for `/toggled`'s disabled time: no event created while it was surely disabled (from the disable's answer
 * to the enable's request) reached it, and no request at all came while it was disabled, past the attempts in flight
 * at the disable (IN_FLIGHT_MS).
 */
export function nothingWhileDisabled(w: WebhookData): WebhookCheck {
  const { ackedAt: from } = w.disable
  const to = w.enable.sentAt
  if (from === undefined) return check('webhooks: nothing reaches a disabled endpoint', [`not disabled: ${w.disable.error ?? 'no answer'}`], '')
  const problems: string[] = []
  const got = w.received.filter((r) => r.path === '/toggled')
  for (const r of got) {
    const created = Date.parse(JSON.parse(r.body)?.created_at)
    if (created >= from && created < to) problems.push(`${idOf(r)} created ${iso(created)}, inside the disabled time, received ${iso(r.at)}`)
    if (r.at >= from + IN_FLIGHT_MS && r.at < to)
      problems.push(`${idOf(r)} received ${iso(r.at)}, ${((r.at - from) / 1000).toFixed(1)} s into the disabled time`)
  }
  return check(
    'webhooks: nothing reaches a disabled endpoint',
    problems,
    `disabled ${((to - from) / 1000).toFixed(1)} s; none of its events, no request past ${IN_FLIGHT_MS / 1000} s into it`,
  )
}

/** (c) Nothing after `/deleted` was deleted, but the attempts in flight at the delete (IN_FLIGHT_MS). */
export function nothingAfterDelete(w: WebhookData): WebhookCheck {
  const { ackedAt } = w.delete
  if (ackedAt === undefined) return check('webhooks: nothing reaches a deleted endpoint', [`not deleted: ${w.delete.error ?? 'no answer'}`], '')
  const late = w.received.filter((r) => r.path === '/deleted' && r.at >= ackedAt + IN_FLIGHT_MS)
  const problems = late.map((r) => `${idOf(r)} received ${iso(r.at)}, ${((r.at - ackedAt) / 1000).toFixed(1)} s after the delete`)
  const after = w.received.filter((r) => r.path === '/deleted' && r.at >= ackedAt).length
  return check('webhooks: nothing reaches a deleted endpoint', problems, `${after} request(s) after the delete, all within ${IN_FLIGHT_MS / 1000} s`)
}

/**
 * The first orchestrator was SIGKILLed with deliveries of its in flight (held by the receiver), and every attempt it
 * cut short was answered 2xx later (another orchestrator, or it restarted, once the delivery's ack wait ran out).
 */
export function killedDeliveriesDelivered(w: WebhookData): WebhookCheck {
  const problems: string[] = []
  const got = delivered(w, '/all')
  const cut = w.kills.flatMap((k) => k.cut.map((id) => ({ id, at: k.at })))
  const running = w.kills.filter((k) => k.running).length
  if (running && !cut.length) problems.push(`none of ${running} SIGKILLs of the running orchestrator found a delivery of its in flight`)
  for (const c of cut) if (!got.has(c.id)) problems.push(`${c.id}, cut by the SIGKILL at ${iso(c.at)}, never delivered afterwards`)
  const hit = w.kills.filter((k) => k.cut.length).length
  return check(
    'webhooks: deliveries cut by an orchestrator SIGKILL delivered later',
    problems,
    running
      ? `${hit} of ${running} SIGKILLs cut ${cut.length} attempts in flight; each delivered later${running < w.kills.length ? ` (${w.kills.length - running} found it exited already)` : ''}`
      : 'no SIGKILL of a running orchestrator',
  )
}

export function webhookChecks(w: WebhookData): WebhookCheck[] {
  return [webhooksSettled(w), everyEventDelivered(w), deliveriesAreTheirEvents(w), nothingWhileDisabled(w), nothingAfterDelete(w), killedDeliveriesDelivered(w)]
}
