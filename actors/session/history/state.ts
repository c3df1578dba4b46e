import type { CapturedEnvironment, Session } from '../../../protocol/session.js'
import type { UsageTotals } from '../billing/index.js'
import { toWireUsage } from '../billing/index.js'

/**
 * A session's record, `session.<id>` in the `troupe_sessions` bucket: the wire view as of the last status change or
 * update, plus what the history needs beside it. The events stream is the source of truth for everything that
 * changes during a session; this record is its snapshot for reads of idle sessions and for lists. Only the session's
 * actor writes it, each write fenced by the one before (kit/fenced-record.ts), so an actor whose host lost the
 * session without noticing fails instead of overwriting. The bucket also holds the kind's work markers (kit/keyed-actors.ts).
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
  /** The API key that created it, when keys were checked: whose concurrent running sessions it counts in. */
  api_key_id?: string
  /**
   * The custom skills the session runs (its agent snapshot's `skills`, resolved and pinned at creation), with what
   * running them needs: where each bundle's bytes are, its runtime name (its directory under /workspace/skills) and
   * its description (the discovery list). Fixed for the session's life: a session update cannot change skills.
   */
  skills?: SessionSkill[]
}

/** One skill a session runs: a concrete version and what its bundle holds. */
export interface SessionSkill {
  skill_id: string
  version: string
  /** The frontmatter `name`: its directory, /workspace/skills/<name>/, and what the `Skill` tool is called with. */
  name: string
  description: string
  /** The object in troupe_skill_bundles holding the version's canonical zip. */
  object: string
  /** Its files' size once unpacked. */
  expanded_bytes: number
  /**
   * A roster member's skill (threads.ts): the member's agent id. Its directory is then `.agents/<member>/<name>`
   * beneath /workspace/skills (`dir`), so members' skills of one name never meet; the coordinator's (and `self`'s)
   * have neither.
   */
  member?: string
  /** Its directory beneath /workspace/skills when not its name. */
  dir?: string
}

export const SESSION_PREFIX = 'session.'
export const sessionKey = (id: string) => `${SESSION_PREFIX}${id}`

export function statsOf(s: Session, totals: UsageTotals) {
  const end = s.archived_at ? Date.parse(s.archived_at) : Date.now()
  return { active_seconds: totals.active_ms / 1000, duration_seconds: Math.max(0, end - Date.parse(s.created_at)) / 1000 }
}

/** The wire view: archived sessions report `terminated` (DECISIONS.md). */
export function viewOf(rec: SessionRecord, totals: UsageTotals): Session {
  const s = rec.session
  return {
    ...s,
    status: s.archived_at ? 'terminated' : s.status,
    usage: toWireUsage(totals),
    stats: statsOf(s, totals),
  }
}
