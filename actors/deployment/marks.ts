import type { WebhookMark } from '../../protocol/webhook-event.js'
import type { MarksOf } from '../kit/index.js'
import type { DeploymentState } from './state.js'

/**
 * The webhook events a change of a deployment makes: its creation, archiving, pause and unpause, any other update,
 * and `deployment_run.started` when a scheduled run's intent is stored (manual runs make no `deployment_run.*` event).
 * Deployments are never deleted: `deployment.deleted` is never made.
 */
export const deploymentMarks: MarksOf<DeploymentState> = (_key, was, next) => {
  if (!next) return []
  const d = next.deployment
  const out: WebhookMark[] = []
  if (!was) out.push({ type: 'deployment.created', id: d.id })
  else if (d.archived_at && !was.deployment.archived_at) out.push({ type: 'deployment.archived', id: d.id })
  else if (d.status !== was.deployment.status) out.push({ type: d.status === 'paused' ? 'deployment.paused' : 'deployment.unpaused', id: d.id })
  else if (d.updated_at !== was.deployment.updated_at) out.push({ type: 'deployment.updated', id: d.id })
  const pending = new Set((was?.runs ?? []).map((r) => r.id))
  for (const r of next.runs) if (!pending.has(r.id) && r.trigger_context.type === 'schedule') out.push({ type: 'deployment_run.started', id: r.id })
  return out
}
