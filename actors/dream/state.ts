import { type Dream, FINAL_DREAM_STATUSES } from '../../protocol/schemas/dream.js'
import { idFromKey } from '../../protocol/ids.js'

/**
 * How dreams sit in their bucket:
 *
 *   troupe_dreams  dream.<id>  the dream's state (below): the actor's record, written only by the owner of its
 *                              partition, fenced by its revision; the create is its first write, on the owner.
 *                  work.<id>   while the dream is pending or running, or still holds its store.
 *
 * An id without a record has the empty state (`{}`): the kind's create runs on the owner as an exclusive op, so the
 * actor of a new id must exist before its record does. Every other op answers 404 for it, and lists show none.
 */
export interface DreamState {
  dream?: Dream
  /** Fingerprint of the create request, when it carried an Idempotency-Key: its retries must match it. */
  created_by?: string
  /** The store an `update_existing` dream holds (memory store `hold`), until its work has released it. */
  held?: string
  /** Where the start got to, so a step repeated after a crash goes on from there (each part is idempotent too). */
  started?: {
    /** The output store is made (create_new) and holds a copy of the input store's memories. */
    output?: true
    /** The transcripts' files, by input session, in the order of the session ids. */
    transcripts?: string[]
  }
  /** When the dream was canceled while its session may still run: the interrupt to send until it stops. */
  interrupt?: true
}

export const DREAM_PREFIX = 'dream.'

export const EMPTY: DreamState = {}

/** Whether the dream's status is final (it never changes again). */
export const ended = (d: Dream): boolean => FINAL_DREAM_STATUSES.includes(d.status)

/** Whether the dream still has work: to start or follow its session, to stop it (canceled), or to let go of its store. */
export const hasWork = (s: DreamState): boolean => !!s.dream && (!ended(s.dream) || s.held !== undefined || s.interrupt === true)

// Every id a dream makes comes from its own: a step repeated after a crash finds what the first attempt made.
/** The session that runs the dream. */
export const sessionOf = (dreamId: string) => idFromKey('sesn', 'dream', dreamId)
/** The Idempotency-Key of everything the dream creates through another kind (its store, agent, session). */
export const keyOf = (dreamId: string) => `dream:${dreamId}`
/** The file holding one input session's transcript. */
export const transcriptFileOf = (dreamId: string, sessionId: string) => idFromKey('file', 'dream_transcript', `${dreamId}/${sessionId}`)
