import type { MessageCreateParamsStreaming } from '@anthropic-ai/sdk/resources/messages'
import type { GraderResult, ModelUsage } from '../../../protocol/session-events.js'
import { newId } from '../../../protocol/ids.js'
import { intervalAfter } from '../../kit/index.js'
import type { Emitter, TurnDeps } from './types.js'
import type { History } from '../history/index.js'
import { classifyFailure, streamModel } from './model.js'
import { ONGOING_INTERVAL_MS, type OpenOutcome } from '../history/index.js'
import { transcript } from '../history/index.js'

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
  readonly events: Pick<Emitter, 'emit'>
  readonly deps: Pick<TurnDeps, 'model' | 'modelRetry' | 'settings' | 'ctx'>
}

const ZERO: ModelUsage = { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, speed: null }

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
  const end = (result: GraderResult, explanation: string, usage = ZERO) =>
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
