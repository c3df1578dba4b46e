import type { MessageCreateParamsStreaming } from '@anthropic-ai/sdk/resources/messages'
import { decodeTime } from 'ulid'
import type { SessionEvent } from '../../../protocol/events.js'
import { fail, inField } from '../../../protocol/errors/fail.js'
import { idFromKey, newId } from '../../../protocol/ids.js'
import type { FileReader } from '../../file/read.js'
import { intervalAfter } from '../../kit/retry-policy.js'
import type { ActorDeps } from '../actor/deps.js'
import type { History } from './history.js'
import { classifyFailure, streamModel } from '../turn/model.js'
import { transcript } from './transcript.js'

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

/** WIRE §6 OutcomeEvaluation: one per outcome, as it stands. */
export interface OutcomeEvaluation {
  type: 'outcome_evaluation'
  outcome_id: string
  description: string
  /** 0-based: the grader pass under way or last made. */
  iteration: number
  result: 'pending' | 'running' | 'evaluating' | 'satisfied' | 'max_iterations_reached' | 'failed' | 'interrupted'
  explanation: string | null
  completed_at: string | null
}

/** A defined outcome's evaluation as it is stored, before the agent takes it up. */
export const evaluationOf = (e: SessionEvent): OutcomeEvaluation => ({
  type: 'outcome_evaluation',
  outcome_id: String(e.outcome_id),
  description: String(e.description),
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

export type GraderResult = 'satisfied' | 'needs_revision' | 'max_iterations_reached' | 'failed' | 'interrupted'

/** What the agent is told when an outcome is defined: the goal, and the rubric it will be judged by. */
export const outcomeBrief = (o: OpenOutcome): string =>
  `Work toward this outcome: ${o.description}\n\nWhen your turn ends, a grader judges your work against this rubric:\n<rubric>\n${o.rubric}\n</rubric>`

/** What the agent is told when the grader asks for a revision. */
export const revisionNote = (explanation: string, iteration: number, max: number): string =>
  `A grader judged your work against the rubric and it needs revision (evaluation ${iteration + 1} of at most ${max}):\n${explanation}\n\nKeep working toward the outcome.`

/** The grader's instructions; its verdict is one JSON object (`parseVerdict`). */
export const GRADER_SYSTEM = [
  'You grade the work of an AI agent against a rubric. You are given the outcome the agent worked toward, the rubric,',
  'and a transcript of its conversation. Judge only by the rubric and what the transcript shows. Answer with one JSON',
  'object and nothing else: {"result": "satisfied" | "needs_revision", "explanation": "<why; for needs_revision, what',
  'must change>"}.',
].join(' ')

/** The grader's verdict in its answer: the first JSON object with a known `result`; undefined when there is none. */
export function parseVerdict(text: string): { result: 'satisfied' | 'needs_revision'; explanation: string } | undefined {
  for (let start = text.indexOf('{'); start >= 0; start = text.indexOf('{', start + 1)) {
    for (let end = text.lastIndexOf('}'); end > start; end = text.lastIndexOf('}', end - 1)) {
      try {
        const v = JSON.parse(text.slice(start, end + 1)) as { result?: unknown; explanation?: unknown }
        if (v.result === 'satisfied' || v.result === 'needs_revision') {
          return { result: v.result, explanation: typeof v.explanation === 'string' ? v.explanation : '' }
        }
      } catch {
        // Not this span: a shorter one may parse.
      }
    }
  }
  return undefined
}

/** The time an event was stored at, from its id (a ULID), for what a replay must date the same way. */
export const eventTime = (id: string): string | null => {
  try {
    return new Date(decodeTime(id.slice(id.indexOf('_') + 1))).toISOString()
  } catch {
    return null
  }
}

/** The grader's request: the agent's model (and geography), tool-free, over the outcome, rubric and transcript. */
function graderParams(h: History, o: OpenOutcome, maxTokens: number): MessageCreateParamsStreaming {
  const m = h.session.agent.model
  const text = `<outcome>\n${o.description}\n</outcome>\n\n<rubric>\n${o.rubric}\n</rubric>\n\n<transcript>\n${transcript(h.messages)}\n</transcript>`
  return {
    model: m.id,
    max_tokens: maxTokens,
    system: GRADER_SYSTEM,
    messages: [{ role: 'user', content: [{ type: 'text', text }] }],
    stream: true,
    ...(m.inference_geo ? { inference_geo: m.inference_geo } : {}),
  } as MessageCreateParamsStreaming
}

/** What a grader pass needs of its session actor. */
export interface GradeParts {
  readonly h: History
  /** The actor stopped (a takeover, a shutdown): a pass cut short leaves its span open for the next host to finish. */
  readonly dead: () => boolean
  readonly events: { emit(type: string, fields: Record<string, unknown>): SessionEvent }
  readonly deps: Pick<ActorDeps, 'model' | 'modelRetry' | 'settings' | 'ctx'>
}

const ZERO = { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, speed: null }

/**
 * One grader pass over the open outcome: its span (the open one a takeover left, or a new one), `_ongoing` while the
 * request runs, and its end with the verdict. Failed requests are retried as the turn's are; one that cannot answer
 * (no model, retries exhausted, a verdict that does not parse) ends `failed`. False when interrupted (the span is
 * closed `interrupted`) or the actor stopped.
 */
export async function grade(p: GradeParts, o: OpenOutcome, signal: AbortSignal): Promise<boolean> {
  const { h, events, deps } = p
  const iteration = h.outcomeIteration
  const start = h.gradingSpan ?? events.emit('span.outcome_evaluation_start', { outcome_id: o.id, iteration }).id
  const end = (result: GraderResult, explanation: string, usage: unknown = ZERO) =>
    events.emit('span.outcome_evaluation_end', { outcome_evaluation_start_id: start, outcome_id: o.id, iteration, result, explanation, usage })
  if (!deps.model) {
    end('failed', 'No model endpoint is configured on this server, so the grader cannot run.')
    return true
  }
  const ongoing = setInterval(() => events.emit('span.outcome_evaluation_ongoing', { outcome_id: o.id, iteration }), ONGOING_INTERVAL_MS)
  try {
    for (let attempt = 1; ; attempt++) {
      try {
        const res = await streamModel(
          deps.model,
          graderParams(h, o, deps.settings.maxTokens),
          signal,
          () => undefined,
          () => newId('sevt'),
        )
        const text = res.outputs.flatMap((x) => (x.type === 'agent.message' ? x.content.map((c) => c.text) : [])).join('\n')
        const verdict = parseVerdict(text)
        if (!verdict) {
          end('failed', `The grader's answer held no verdict: ${text.slice(0, 500)}`, res.usage)
          return true
        }
        const last = iteration + 1 >= o.max
        end(verdict.result === 'needs_revision' && last ? 'max_iterations_reached' : verdict.result, verdict.explanation, res.usage)
        return true
      } catch (err) {
        const f = classifyFailure(err, deps.model.endpoint)
        if (p.dead()) return false
        if (f.kind === 'aborted' || signal.aborted) {
          end('interrupted', 'Interrupted while the grader was judging the work.')
          return false
        }
        if (f.kind === 'fatal' || attempt >= deps.modelRetry.maximumAttempts) {
          end('failed', f.message)
          return true
        }
        deps.ctx.log.warn({ session: h.session.id, outcome: o.id, attempt, error_type: f.type }, f.message)
        const wait = (f.kind === 'retryable' && f.retryAfterMs) || intervalAfter(deps.modelRetry, attempt)
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, wait)
          signal.addEventListener(
            'abort',
            () => {
              clearTimeout(t)
              resolve()
            },
            { once: true },
          )
        })
      }
    }
  } finally {
    clearInterval(ongoing)
  }
}

/** The longest rubric, inline or read from a File (WIRE §7.1). */
export const RUBRIC_MAX_CHARS = 262_144

/**
 * File rubrics read as text (SPEC session create rule 5): before anything of the request is stored, so a missing or
 * unreadable File leaves nothing behind, and the outcome keeps the text whatever happens to the File later. `field(i)`
 * names event `i` in errors. Events without one are returned as they are.
 */
export async function resolveRubrics<E extends { type: string }>(files: FileReader, events: readonly E[], field: (i: number) => string): Promise<E[]> {
  return Promise.all(
    events.map(async (e, i) => {
      const rubric = (e as { rubric?: { type?: string; file_id?: string } }).rubric
      if (e.type !== 'user.define_outcome' || rubric?.type !== 'file' || !rubric.file_id) return e
      const at = `${field(i)}.rubric.file_id`
      const chunks = await files.read(rubric.file_id)
      if (!chunks) throw inFieldError(at, fail('file_not_found', rubric.file_id))
      const parts: Uint8Array[] = []
      let size = 0
      for await (const c of chunks) {
        size += c.length
        // Four bytes a character at most: past that, no text of the limit's length.
        if (size > RUBRIC_MAX_CHARS * 4) throw fail('rubric_file_unreadable', at, 'is longer than 262144 characters')
        parts.push(c)
      }
      let content: string
      try {
        content = new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(parts))
      } catch {
        throw fail('rubric_file_unreadable', at, 'is not UTF-8 text')
      }
      if (!content.length) throw fail('rubric_file_unreadable', at, 'is empty')
      if (content.length > RUBRIC_MAX_CHARS) throw fail('rubric_file_unreadable', at, 'is longer than 262144 characters')
      return { ...e, rubric: { type: 'text', content } }
    }),
  )
}

/** `err` with `field: ` in front of its message (a 404 about a field's id). */
function inFieldError(field: string, err: Error): Error {
  try {
    inField(field)(err)
  } catch (named) {
    return named as Error
  }
  return err
}
