import type { KV } from '@nats-io/kv'
import type { CapturedEnvironment, Session } from '../../protocol/session.js'
import type { UsageTotals } from './billing/usage.js'
import { live, RecordStore } from '../kit/store.js'
import type { WorkMarks } from '../kit/work-marks.js'
import { partitionOfKey, type OwnedPartitions } from '../kit/owned.js'

/**
 * How sessions sit in the `troupe_sessions` bucket:
 *
 *   session.<id>   the record: the wire view as of the last status change or update, plus what the history
 *                  needs beside it. The events stream is the source of truth for everything that changes
 *                  during a session; this record is its snapshot for reads of idle sessions and for lists.
 *   work.<id>      present while the session has work in flight (a turn running, or client events waiting
 *                  to be handled). A host that takes a partition over resumes exactly these sessions.
 *
 * Only the host owning a session's partition writes either key; writes are compare-and-set on the record's
 * revision, so a host that lost the partition without noticing fails instead of overwriting.
 */
export interface SessionRecord {
  session: Session
  /** The environment configuration captured at creation; later environment updates do not change it. */
  env: CapturedEnvironment
  totals: UsageTotals
  /** The session was created with a budget (SPEC: one created without may never add one). */
  budget_created: boolean
  /** The budget was removed at some point (SPEC: it cannot be re-added). */
  budget_removed: boolean
  /** Epoch ms when the current running stretch began; null while not running. */
  running_since: number | null
  /** Fingerprint of the create request, when it carried an Idempotency-Key: its retries must match it. */
  created_by?: string
}

export const SESSION_PREFIX = 'session.'
export const sessionKey = (id: string) => `${SESSION_PREFIX}${id}`
export const WORK_PREFIX = 'work.'
export const workKey = (id: string) => `${WORK_PREFIX}${id}`

/**
 * Whether a session has a work marker: what its owner knows (no round trip) once it has listed the partition's
 * markers; the store otherwise.
 */
export async function hasWork(deps: { kv: KV; actors: { marks: WorkMarks } }, id: string): Promise<boolean> {
  return deps.actors.marks.has(id) ?? live(await deps.kv.get(workKey(id)))
}

const partitionOfRecord = partitionOfKey(SESSION_PREFIX)

/**
 * The records, cached while this host owns their partition (it is then their only writer): a GET of an idle
 * session, and rebuilding its actor, cost no KV round trip. Cached as bytes, so an actor may change the record
 * it was built from; `owned` drops a partition's entries whenever its ownership changes.
 */
export function sessionStore(kv: KV, owned: OwnedPartitions): RecordStore<SessionRecord> {
  const store = new RecordStore<SessionRecord>(kv, (key) => owned.has(partitionOfRecord(key)), true)
  owned.onChange = (p) => store.forget((key) => partitionOfRecord(key) === p)
  return store
}
