import type { MarksOf } from '../kit/index.js'
import type { StoredHead } from './state.js'

/** The webhook events a change of an agent's head makes (agents are never deleted: `agent.deleted` is never made). */
export const agentMarks: MarksOf<StoredHead> = (_key, was, next) => {
  if (!next) return []
  const id = next.agent.id
  if (!was) return [{ type: 'agent.created', id }]
  if (next.agent.archived_at && !was.agent.archived_at) return [{ type: 'agent.archived', id }]
  return next.agent.updated_at !== was.agent.updated_at ? [{ type: 'agent.updated', id }] : []
}
