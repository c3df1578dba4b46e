import type { MarksOf } from '../kit/index.js'
import { ENV_PREFIX, type StoredEnvironment } from './state.js'

/** The webhook events a change of an environment makes (its session references moving make none). */
export const environmentMarks: MarksOf<StoredEnvironment> = (key, was, next) => {
  const id = key.slice(ENV_PREFIX.length)
  if (!next) return was ? [{ type: 'environment.deleted', id }] : []
  if (!was) return [{ type: 'environment.created', id }]
  if (next.env.archived_at && !was.env.archived_at) return [{ type: 'environment.archived', id }]
  return next.env.updated_at !== was.env.updated_at ? [{ type: 'environment.updated', id }] : []
}
