import type { KV } from '@nats-io/kv'
import { fail } from '../../protocol/errors/fail.js'
import { newId } from '../../protocol/ids.js'
import { patchMetadata, sameJson } from '../../protocol/schemas/common.js'
import type { Environment } from '../../protocol/schemas/environment.js'
import { now } from '../../protocol/time.js'
import { casLoop, createdId, type Handlers, LOST, pageOf, type Projection, RecordStore } from '../kit/index.js'
import type { EnvironmentKind } from '../../protocol/ops/environment.js'
import { resolveConfig } from './config.js'
import { environmentMarks } from './marks.js'
import { envKey, view, type StoredEnvironment } from './state.js'

export function environmentOps(kv: KV, projection: Projection<Environment>): Handlers<typeof EnvironmentKind> {
  const store = new RecordStore<StoredEnvironment>(kv, undefined, false, environmentMarks)
  const missing = (id: string) => (): never => {
    throw fail('environment_not_found', id)
  }

  return {
    async create(req) {
      const b = req.body
      // With an Idempotency-Key the id comes from the key: a retry finds the environment its first attempt stored.
      const { id: minted, createdBy } = createdId('env', 'environments.create', req)
      let id = minted
      const t = now()
      const env: Environment = {
        id,
        type: 'environment',
        name: b.name,
        description: b.description ?? null,
        metadata: b.metadata ?? {},
        config: resolveConfig(b.config, b.scope, undefined),
        created_at: t,
        updated_at: t,
        archived_at: null,
      }
      for (let attempt = 0; attempt < 3; attempt++) {
        if ((await store.create(envKey(id), { env, refs: 0, ...(createdBy ? { created_by: createdBy } : {}) })) !== false) return view(env)
        const cur = createdBy ? await store.get(envKey(id)) : undefined
        if (cur) {
          if (cur.value.created_by !== createdBy) throw fail('idempotency_key_reused')
          return view(cur.value.env)
        }
        // Taken, then gone: a keyed create raced the delete of the environment its key made (the id is free again),
        // or a fresh id met one already stored (a ULID collision: another id does not).
        if (!createdBy) env.id = id = newId('env')
      }
      throw fail('internal', `environment id ${id} is taken and not readable`)
    },

    async get({ id }) {
      const cur = await store.get(envKey(id))
      if (!cur) missing(id)()
      return view(cur!.value.env)
    },

    async list(req) {
      const q = req.query
      await projection.fresh()
      const includeArchived = q.include_archived ?? false
      return pageOf(
        projection,
        'environments',
        { include_archived: includeArchived },
        q.page,
        q.limit ?? 100,
        (e) => includeArchived || e.archived_at === null,
        view,
      )
    },

    async update({ id, body: b }) {
      return store.mutate(
        envKey(id),
        ({ value }) => {
          const env = value.env
          if (env.archived_at) throw fail('environment_archived', id)
          const next: Environment = {
            ...env,
            name: b.name ?? env.name,
            description: b.description === undefined ? env.description : b.description,
            metadata: b.metadata ? patchMetadata(env.metadata, b.metadata, true) : env.metadata,
            config: b.config === undefined && b.scope === undefined ? env.config : resolveConfig(b.config, b.scope, env.config),
          }
          if (sameJson(next, env)) return { result: view(env) }
          next.updated_at = now()
          return { next: { ...value, env: next }, result: view(next) }
        },
        missing(id),
      )
    },

    async archive({ id }) {
      return store.mutate(
        envKey(id),
        ({ value }) => {
          if (value.env.archived_at) return { result: view(value.env) }
          const t = now()
          const env = { ...value.env, archived_at: t, updated_at: t }
          return { next: { ...value, env }, result: view(env) }
        },
        missing(id),
      )
    },

    async delete({ id }) {
      return casLoop(async () => {
        const cur = await store.get(envKey(id))
        if (!cur) missing(id)()
        if (cur!.value.refs > 0) throw fail('environment_in_use', id, cur!.value.refs)
        // CAS on the revision we checked: a session that took a reference meanwhile makes this retry.
        return (await store.delete(envKey(id), cur!.revision, cur!.value)) ? { id, type: 'environment_deleted' as const } : LOST
      })
    },

    /** Internal (session actor): take a reference for a new session; the environment must be usable. */
    async acquire({ id }) {
      return store.mutate(
        envKey(id),
        ({ value }) => {
          if (value.env.archived_at) throw fail('environment_archived', id)
          return { next: { ...value, refs: value.refs + 1 }, result: view(value.env) }
        },
        missing(id),
      )
    },

    /** Internal (session actor): drop a session's reference. Missing environments are fine: nothing to drop. */
    async release({ id }) {
      return casLoop(async () => {
        const cur = await store.get(envKey(id))
        if (!cur) return { released: false }
        const next = { ...cur.value, refs: Math.max(0, cur.value.refs - 1) }
        return (await store.update(envKey(id), next, cur.revision)) === false ? LOST : { released: true }
      })
    },
  }
}
