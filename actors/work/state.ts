import { fail } from '../../protocol/errors/fail.js'
import { NO_HEARTBEAT, type Work, type WorkLease, WORK_TTL } from '../../protocol/schemas/work.js'

const iso = (ms: number) => new Date(ms).toISOString()

/** One work item as stored: the API's fields but those its queue and session give, and its lease. */
export interface Item extends Omit<Work, 'type' | 'environment_id' | 'data' | 'secret'> {
  session_id: string
  /** The value the holder's next beat must send; null before the first beat of a claim. */
  last_heartbeat: string | null
  /** When the lease lapses (ms since the epoch); null while queued or stopped. */
  lease_until: number | null
  ttl_seconds: number
  /** When a poll handed the queued item out (ms); pending until acked, or until older than the next poll's reclaim age. */
  handed_at: number | null
  /** Hand-outs so far: the claim a sessions token belongs to. */
  claim: number
  /** Input reached the session while this item was stopping: a new item is queued once it stops. */
  again?: boolean
}

/** An environment's queue: its items in creation order (ids are time-ordered), stopped ones kept up to RETAIN_STOPPED. */
export interface Queue {
  items: Item[]
}

/** Stopped items kept for get and list, newest first beyond this are dropped. */
export const RETAIN_STOPPED = 100

/** How long an acknowledged item waits for its first beat before it is queued again (s). */
export const ACK_LEASE_S = 30

export const emptyQueue = (): Queue => ({ items: [] })

export const find = (q: Queue, id: string, env: string): Item => {
  const it = q.items.find((i) => i.id === id)
  if (!it) throw fail('work_not_found', id, env)
  return it
}

/** The item as the API shows it; `secret` only on a poll's answer. */
export function view(env: string, it: Item, secret: string | null = null): Work {
  return {
    id: it.id,
    type: 'work',
    environment_id: env,
    data: { type: 'session', id: it.session_id },
    state: it.state,
    metadata: it.metadata,
    secret,
    created_at: it.created_at,
    acknowledged_at: it.acknowledged_at,
    started_at: it.started_at,
    latest_heartbeat_at: it.latest_heartbeat_at,
    stop_requested_at: it.stop_requested_at,
    stopped_at: it.stopped_at,
  }
}

export const lease = (it: Item, extended = false): WorkLease => ({
  last_heartbeat: it.last_heartbeat,
  lease_extended: extended,
  state: it.state,
  ttl_seconds: it.ttl_seconds,
})

export const isLive = (it: Item) => it.state !== 'stopped'

/** A requeue: the item waits again for a poll, its lease and its claim's marks gone; metadata and created_at stay. */
const requeued = (it: Item): Item => ({
  ...it,
  state: 'queued',
  acknowledged_at: null,
  started_at: null,
  latest_heartbeat_at: null,
  last_heartbeat: null,
  lease_until: null,
  handed_at: null,
  ttl_seconds: WORK_TTL.default,
})

const stopped = (it: Item, now: number): Item => ({ ...it, state: 'stopped', stopped_at: iso(now), lease_until: null, handed_at: null })

/** Leases that lapsed by `now`: a starting or active item is queued again, a stopping one stops. Same object when none did. */
export function lapse(q: Queue, now: number): Queue {
  let changed = false
  const items = q.items.map((it) => {
    if (it.lease_until === null || it.lease_until > now) return it
    changed = true
    return it.state === 'stopping' ? stopped(it, now) : requeued(it)
  })
  return changed ? retain({ items }) : q
}

/** Drops the oldest stopped items beyond RETAIN_STOPPED. */
function retain(q: Queue): Queue {
  const stoppedCount = q.items.filter((i) => i.state === 'stopped').length
  if (stoppedCount <= RETAIN_STOPPED) return q
  let drop = stoppedCount - RETAIN_STOPPED
  return { items: q.items.filter((i) => !(i.state === 'stopped' && drop-- > 0)) }
}

export const replace = (q: Queue, next: Item): Queue => retain({ items: q.items.map((i) => (i.id === next.id ? next : i)) })

/** The next item a poll takes: the oldest queued one nobody holds as pending (or held longer than `reclaimMs`). */
export const takeable = (q: Queue, now: number, reclaimMs: number): Item | undefined =>
  q.items.find((i) => i.state === 'queued' && (i.handed_at === null || now - i.handed_at >= reclaimMs))

/** When something a waiting poll cares about happens next: a pending item turns reclaimable, or a lease lapses. */
export function nextChange(q: Queue, now: number, reclaimMs: number): number {
  let at = Number.POSITIVE_INFINITY
  for (const i of q.items) {
    if (i.state === 'queued' && i.handed_at !== null) at = Math.min(at, i.handed_at + reclaimMs)
    if (i.lease_until !== null) at = Math.min(at, i.lease_until)
  }
  return Math.max(at, now)
}

export const handOut = (it: Item, now: number): Item => ({ ...it, handed_at: now, claim: it.claim + 1 })

/**
 * An ack: queued → starting, the lease set to wait ACK_LEASE_S for the first beat. A second ack before that beat
 * (a retried answer) gets the item as it is; an item further along is a 409.
 */
export function acked(it: Item, now: number): Item {
  if (it.state === 'starting' && it.last_heartbeat === null) return it
  if (it.state !== 'queued') throw fail('work_not_queued', it.id, it.state)
  return { ...it, state: 'starting', acknowledged_at: iso(now), handed_at: null, lease_until: now + ACK_LEASE_S * 1000 }
}

/** The effective TTL of a beat (s): the desired one clamped to WORK_TTL, the default when none is asked. */
export const ttlOf = (desired: number | undefined) => Math.min(WORK_TTL.max, Math.max(WORK_TTL.min, desired ?? WORK_TTL.default))

/** A heartbeat value strictly after `prev`: two beats never store the same one, even within a millisecond. */
function beatValue(prev: string | null, now: number): string {
  const last = prev === null ? Number.NEGATIVE_INFINITY : Date.parse(prev)
  return iso(Number.isNaN(last) || now > last ? now : last + 1)
}

/**
 * A heartbeat (issue 29 §3). On a starting or active item, `expected` (NO_HEARTBEAT when omitted) must equal the stored
 * `last_heartbeat` (NO_HEARTBEAT when none), and a sessions token must be of the current claim, else 412 with the
 * lease; a match stores a new value and extends the lease by the effective TTL. A stopping item is not compared and its
 * lease is extended (the holder is winding down); a stopped one is answered as it is. A queued item has no lease to
 * beat (it was requeued: its old holder lost it): 412.
 */
export function beat(it: Item, now: number, expected: string | undefined, desired: number | undefined, claim: number | undefined) {
  if (it.state === 'stopped') return { item: it, extended: false }
  const ttl = ttlOf(desired)
  if (it.state === 'stopping') return { item: { ...it, ttl_seconds: ttl, lease_until: now + ttl * 1000 }, extended: true }
  const stored = it.last_heartbeat ?? NO_HEARTBEAT
  if (it.state === 'queued' || (expected ?? NO_HEARTBEAT) !== stored || (claim !== undefined && claim !== it.claim)) {
    throw fail('heartbeat_precondition_failed', it.id, { ...lease(it), last_heartbeat: it.last_heartbeat })
  }
  const value = beatValue(it.last_heartbeat, now)
  const item: Item = {
    ...it,
    state: 'active',
    started_at: it.started_at ?? value,
    latest_heartbeat_at: value,
    last_heartbeat: value,
    ttl_seconds: ttl,
    lease_until: now + ttl * 1000,
  }
  return { item, extended: true }
}

/**
 * A stop: queued → stopped; starting/active → stopping (`force`: stopped); stopping + force → stopped; stopped: 409.
 * Every stop asked for records when it was (`stop_requested_at`, kept from an earlier request), an immediate one too.
 */
export function stop(it: Item, now: number, force: boolean): Item {
  if (it.state === 'stopped') throw fail('work_stopped', it.id)
  if (it.state === 'queued' || force) return stopped({ ...it, stop_requested_at: it.stop_requested_at ?? iso(now) }, now)
  if (it.state === 'stopping') return it
  return { ...it, state: 'stopping', stop_requested_at: iso(now) }
}

/**
 * Items that stopped while their session asked for work again get their successor, queued; true in `queued` when one
 * was. Same object when none.
 */
export function successors(q: Queue, now: number, mint: () => string): { q: Queue; queued: boolean } {
  const due = q.items.filter((i) => i.again && i.state === 'stopped')
  if (!due.length) return { q, queued: false }
  const items = q.items.map((i) => (i.again && i.state === 'stopped' ? { ...i, again: false } : i))
  for (const i of due) if (!items.some((o) => o.session_id === i.session_id && isLive(o))) items.push(newItem(mint(), i.session_id, now))
  return { q: { items }, queued: true }
}

export function newItem(id: string, session: string, now: number): Item {
  return {
    id,
    session_id: session,
    state: 'queued',
    metadata: {},
    created_at: iso(now),
    acknowledged_at: null,
    started_at: null,
    latest_heartbeat_at: null,
    stop_requested_at: null,
    stopped_at: null,
    last_heartbeat: null,
    lease_until: null,
    ttl_seconds: WORK_TTL.default,
    handed_at: null,
    claim: 0,
  }
}
