import { fail } from '../../protocol/errors/fail.js'
import { isId } from '../../protocol/ids.js'
import { DeploymentRunKind } from '../../protocol/ops/deployment.js'
import type { DeploymentRun } from '../../protocol/schemas/deployment.js'
import { type Handlers, pageOf, type Projection, type RecordStore } from '../kit/index.js'
import { runKey, runView } from './state.js'

/** Deployment runs: immutable records, so any host reads one from the store and lists them from its projection. */
export function runOps(runs: RecordStore<DeploymentRun>, projection: Projection<DeploymentRun>): Handlers<typeof DeploymentRunKind> {
  return {
    async get({ id }) {
      const rec = isId(DeploymentRunKind.id.prefix, id) ? await runs.get(runKey(id)) : undefined
      if (!rec) throw fail('deployment_run_not_found', id)
      return runView(rec.value)
    },

    async list({ query: q }) {
      await projection.fresh()
      const bound = (k: 'gt' | 'gte' | 'lt' | 'lte') => q[`created_at[${k}]`]?.toISOString()
      const [gt, gte, lt, lte] = [bound('gt'), bound('gte'), bound('lt'), bound('lte')]
      const filters = { deployment_id: q.deployment_id, has_error: q.has_error, trigger_type: q.trigger_type, gt, gte, lt, lte }
      return pageOf(
        projection,
        'deployment_runs',
        filters,
        q.page,
        q.limit ?? 20,
        (r) => {
          if (q.deployment_id !== undefined && r.deployment_id !== q.deployment_id) return false
          if (q.has_error !== undefined && (r.error !== null) !== q.has_error) return false
          if (q.trigger_type !== undefined && r.trigger_context.type !== q.trigger_type) return false
          const t = r.created_at
          return (gt === undefined || t > gt) && (gte === undefined || t >= gte) && (lt === undefined || t < lt) && (lte === undefined || t <= lte)
        },
        runView,
      )
    },
  }
}
