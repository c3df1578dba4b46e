import type { SessionUsage } from '../../protocol/cost.js'
import type { DreamStatus, DreamUsage } from '../../protocol/schemas/dream.js'
import { now } from '../../protocol/time.js'
import type { DreamState } from './state.js'

export const ZERO_USAGE: DreamUsage = { cache_creation_input_tokens: 0, cache_read_input_tokens: 0, input_tokens: 0, output_tokens: 0 }

/** A dream's usage from its session's: the same tokens, cache writes of both durations summed. */
export const usageOf = (u: SessionUsage): DreamUsage => ({
  cache_creation_input_tokens: u.cache_creation.ephemeral_5m_input_tokens + u.cache_creation.ephemeral_1h_input_tokens,
  cache_read_input_tokens: u.cache_read_input_tokens,
  input_tokens: u.input_tokens,
  output_tokens: u.output_tokens,
})

export const sameUsage = (a: DreamUsage, b: DreamUsage) =>
  a.input_tokens === b.input_tokens &&
  a.output_tokens === b.output_tokens &&
  a.cache_read_input_tokens === b.cache_read_input_tokens &&
  a.cache_creation_input_tokens === b.cache_creation_input_tokens

/** The dream at a final status (its store, if it holds one, is let go by the work that follows). */
export function settled(
  s: DreamState,
  status: Extract<DreamStatus, 'completed' | 'failed' | 'canceled'>,
  error: { type: string; message: string } | null = null,
): DreamState {
  return { ...s, dream: { ...s.dream!, status, error, ended_at: now() } }
}
