import { decodeTime } from 'ulid'
import type { UserDefineOutcomeEvent } from '../../../protocol/session-events.js'
import type { OutcomeEvaluation } from '../../../protocol/session.js'
import { idFromKey } from '../../../protocol/ids.js'

/**
 * Outcomes (issue 28 point 7, WIRE §7.1–7.2): `user.define_outcome` gives the agent a goal and a rubric; each time its
 * turn ends, a separate grader request judges the work against the rubric, and `needs_revision` sends the agent back
 * to work with the grader's explanation, until `satisfied`, `max_iterations_reached`, `failed` or `interrupted`.
 * Everything is derived from stored events (History applies them), so a replay rebuilds the same state; the grader's
 * request is the only side effect, and one in flight when its host dies is run again under the same span.
 */

/** `max_iterations` when the outcome leaves it null or omitted (WIRE §7.1). */
export const DEFAULT_MAX_ITERATIONS = 3

/** `span.outcome_evaluation_ongoing` every this long while the grader's request runs. */
export const ONGOING_INTERVAL_MS = 10_000

/** The outcome id a define gets: derived from its event's, so a retried POST names the same outcome. */
export const outcomeIdOf = (eventId: string): string => idFromKey('outc', 'define_outcome', eventId)

/** A defined outcome's evaluation as it is stored, before the agent takes it up. */
export const evaluationOf = (e: UserDefineOutcomeEvent): OutcomeEvaluation => ({
  type: 'outcome_evaluation',
  outcome_id: e.outcome_id,
  description: e.description,
  iteration: 0,
  result: 'pending',
  explanation: null,
  completed_at: null,
})

/** The outcome the agent works toward now (one at a time: a second define is refused while one is open). */
export interface OpenOutcome {
  id: string
  description: string
  rubric: string
  max: number
}

/** What the agent is told when an outcome is defined: the goal, and the rubric it will be judged by. */
export const outcomeBrief = (o: OpenOutcome): string =>
  `Work toward this outcome: ${o.description}\n\nWhen your turn ends, a grader judges your work against this rubric:\n<rubric>\n${o.rubric}\n</rubric>`

/** What the agent is told when the grader asks for a revision. */
export const revisionNote = (explanation: string, iteration: number, max: number): string =>
  `A grader judged your work against the rubric and it needs revision (evaluation ${iteration + 1} of at most ${max}):\n${explanation}\n\nKeep working toward the outcome.`

/** The time an event was stored at, from its id (a ULID), for what a replay must date the same way. */
export const eventTime = (id: string): string | null => {
  try {
    return new Date(decodeTime(id.slice(id.indexOf('_') + 1))).toISOString()
  } catch {
    return null
  }
}
