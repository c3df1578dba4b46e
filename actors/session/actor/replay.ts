import { emptyUsage } from '../billing/index.js'
import { FencedRecord } from '../../kit/index.js'
import { queueWork, selfHostedOf } from '../admission/index.js'
import { History } from '../history/index.js'
import { type SessionRecord, sessionKey } from '../history/index.js'
import { lastSequence, readSession } from '../log/index.js'
import { childHistory } from '../threads/index.js'
import { advisorOf, type Member, rosterOf } from '../turn/index.js'
import type { ActorDeps } from './deps.js'

/** A child thread as a replay leaves it: its history and its subject's last sequence (its fence). */
export interface ReplayedThread {
  member: Member
  h: History
  lastSeq: number
}

/** A session as its record and its history leave it, for its actor to start from. */
export interface Replayed {
  h: History
  /** The primary thread's subject's last sequence (its appends' fence). */
  primarySeq: number
  record: FencedRecord<SessionRecord>
  /** A turn was running, or a work marker was left: the actor starts with its work marked. */
  work: boolean
  threads: Map<string, ReplayedThread>
}

/** Rebuilds a session from its record and its history; undefined when it does not exist. */
export async function replaySession(deps: ActorDeps, id: string): Promise<Replayed | undefined> {
  const [cur, work] = await Promise.all([FencedRecord.read(deps.store, sessionKey(id)), deps.actors.hasWork(id)])
  if (!cur) return undefined
  const rec = cur.value
  // The record holds the latest snapshot; replay re-derives what the events say from a clean start.
  rec.totals = emptyUsage()
  rec.running_since = null
  rec.session.status = 'idle'
  rec.session.outcome_evaluations = []
  const h = new History(rec)
  const advisor = advisorOf(rec.session.agent)
  const members = [...rosterOf(rec.session.agent), ...(advisor ? [advisor] : [])]
  const threads = new Map<string, ReplayedThread>()
  let primarySeq = 0
  // Every thread's records, in the one order they were written (appends.ts): a child's after its creation.
  await readSession(deps.ctx.js, id, await lastSequence(deps.ctx.jsm, id), (r) => {
    if (r.thread !== 'primary') {
      const t = threads.get(r.thread)
      if (!t) return
      t.h.apply(r.event, r.processed, r.request)
      t.lastSeq = r.seq
      return
    }
    primarySeq = r.seq
    h.apply(r.event, r.processed, r.request)
    const ev = r.event
    if (ev.type === 'session.thread_created') {
      const member = members.find((m) => m.name === ev.agent_name)
      const tid = ev.session_thread_id
      if (!member) return
      const ch = childHistory(rec, tid, member.agent, ev.processed_at)
      threads.set(tid, { member, h: ch, lastSeq: 0 })
      h.children.set(tid, ch)
    }
  })
  // A self-hosted session parked on its worker's tools needs its item: the host that parked it may have died before
  // queueing it (the queue keeps one live item per session, so this is harmless when there is one).
  if (h.turnOpen && h.stopReason?.type === 'requires_action') void queueWork(deps.ctx, selfHostedOf(rec), undefined, true)
  // A marker left by a host that died holding the session (busy or not) is cleared when this actor leaves memory.
  return { h, primarySeq, record: cur.record, work: h.running || work, threads }
}
