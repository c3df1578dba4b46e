import { decodeCursor, encodeCursor, isRecordPosition } from '../../protocol/cursor.js'
import { fail, inField } from '../../protocol/errors/fail.js'
import { idFromKey, newId } from '../../protocol/ids.js'
import { copyIdOf } from '../file/index.js'
import { FileKind } from '../../protocol/ops/file.js'
import type { SessionKind } from '../../protocol/ops/session.js'
import type { Page } from '../../protocol/page.js'
import {
  type FileResource,
  isFileParams,
  MAX_SESSION_RESOURCES,
  mountPathOf,
  mountsOverlap,
  type ResourceListInput,
  type ResourceParamsT,
  type SessionResource,
} from '../../protocol/schemas/resource.js'
import { now } from '../../protocol/time.js'
import type { ActorClient } from '../kit/client.js'
import type { Handlers } from '../kit/ops.js'
import type { SessionActor } from './actor.js'
import type { ActorDeps } from './deps.js'
import { sessionKey } from './state.js'

/**
 * A session's resources: files, each an independent copy of the file it names (a new `file_` id scoped to the
 * session, so deleting the original keeps it), listed in the session's record. Their ids and their copies' ids are
 * derived, never minted, wherever a retry must find what its first attempt made: a create's from the session id (the
 * same on a retry with the same Idempotency-Key) and the resource's place in `resources`, an add's from its
 * Idempotency-Key, and every copy's from its session and resource. So a repeated copy finds the first instead of
 * making a second (the file kind's `copy` is idempotent by the copy's id).
 */

/** The id of the resource at `index` of a session create's `resources`. */
const createdResourceId = (sessionId: string, index: number) => idFromKey('sesrsc', 'sessions.create', `${sessionId}/${index}`)

/** The id of an added resource: from its Idempotency-Key, so a retry names the same resource. */
const addedResourceId = (sessionId: string, key: string | undefined) =>
  key === undefined ? newId('sesrsc') : idFromKey('sesrsc', 'sessions.resources.add', `${sessionId}/${key}`)

/** Copies the file of one resource for the session (or finds the copy made before): 404 naming `field`. */
function copyFor(client: ActorClient, sessionId: string, r: FileResource, field: string, rid: string): Promise<unknown> {
  const body = { id: copyIdOf(sessionId, r.id), source_id: r.file_id, scope_id: sessionId, resource_id: r.id }
  return client.call(FileKind.ops.copy, { body, rid }).catch(inField(field))
}

/** Deletes the copies of `resources`, as far as it can: what a failure leaves, the file kind sweeps (actors/file/copies.ts). */
export async function dropCopies(deps: ActorDeps, sessionId: string, resources: readonly SessionResource[], rid: string): Promise<void> {
  for (const r of resources) {
    await deps.ctx.client.call(FileKind.ops.delete, { id: copyIdOf(sessionId, r.id), rid }).catch((err: unknown) => {
      if ((err as { status?: number }).status !== 404)
        deps.ctx.log.warn({ session: sessionId, resource: r.id, err, rid }, 'a resource copy was not deleted; it is swept later')
    })
  }
}

/**
 * The file resources of a new session, each file copied (admission: a file that does not exist is a 404 naming
 * `resources[i].file_id`, as the environment's is). The checks that need no stored state (kinds, mount paths) ran
 * before. A copy that fails takes back the copies made before it.
 */
export async function attachFiles(deps: ActorDeps, sessionId: string, params: readonly ResourceParamsT[], at: string, rid: string): Promise<FileResource[]> {
  const made: FileResource[] = []
  for (const [i, p] of params.entries()) {
    if (!isFileParams(p)) continue
    const r: FileResource = {
      id: createdResourceId(sessionId, i),
      type: 'file',
      file_id: p.file_id,
      mount_path: mountPathOf(p),
      created_at: at,
      updated_at: at,
    }
    try {
      await copyFor(deps.ctx.client, sessionId, r, `resources[${i}].file_id`, rid)
    } catch (err) {
      await dropCopies(deps, sessionId, made, rid)
      throw err
    }
    made.push(r)
  }
  return made
}

/** One page of a session's resources, in the order they were attached. */
function pageOfResources(sessionId: string, all: readonly SessionResource[], q: ResourceListInput): Page<SessionResource> {
  const filters = { session_id: sessionId }
  const after = decodeCursor('session_resources', filters, q.page, isRecordPosition)
  let start = 0
  if (after) {
    const i = all.findIndex((r) => r.id === after.id)
    // The last one shown is gone since: carry on from the first attached after it.
    start = i >= 0 ? i + 1 : all.findIndex((r) => r.created_at > after.created_at)
    if (start < 0) start = all.length
  }
  const data = all.slice(start, start + (q.limit ?? 20))
  const last = data.at(-1)
  const more = start + data.length < all.length
  return { data, next_page: more && last ? encodeCursor('session_resources', filters, { id: last.id, created_at: last.created_at }) : null }
}

type ResourceOps = Pick<Handlers<typeof SessionKind>, 'resources.list' | 'resources.add' | 'resources.get' | 'resources.update' | 'resources.delete'>

/**
 * The resources routes (WIRE §9). Reads answer from the actor in memory, else from the record (resources change only
 * by the record's writes), without waking the session. Adds and deletes are one at a time per session on its owner,
 * only while the session is idle; the record that lists the change is written before the reply, and the files are
 * mounted (or removed) before its next tool runs (actors/workdir/mounts.ts).
 */
export function resourceOps(deps: ActorDeps, peek: (id: string) => SessionActor | undefined, live: (id: string) => Promise<SessionActor>): ResourceOps {
  const resourcesOf = async (id: string): Promise<readonly SessionResource[]> => {
    const a = peek(id)
    if (a) return a.h.session.resources
    const cur = await deps.store.peek(sessionKey(id))
    if (!cur) throw fail('session_not_found', id)
    return cur.value.session.resources
  }
  const find = (id: string, all: readonly SessionResource[], rid: string) => all.find((r) => r.id === rid) ?? notFound(rid, id)

  /** Changes of one session's resources, in arrival order (a copy takes a while; two adds must not both pass the checks). */
  const chains = new Map<string, Promise<unknown>>()
  function serial<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const run = (chains.get(id) ?? Promise.resolve()).then(fn, fn)
    const tail = run.catch(() => undefined)
    chains.set(id, tail)
    void tail.then(() => chains.get(id) === tail && chains.delete(id))
    return run
  }

  /** The session, idle and not archived: only then do its resources change. */
  const changeable = async (id: string) => {
    const actor = await live(id)
    if (actor.h.session.archived_at) throw fail('session_archived', id)
    if (actor.isRunning() || actor.h.pending.size > 0) throw fail('session_busy_resources', id)
    return actor
  }

  return {
    async 'resources.list'({ id, query }) {
      return pageOfResources(id, await resourcesOf(id), query)
    },

    async 'resources.get'({ id, sub }) {
      return find(id, await resourcesOf(id), sub)
    },

    async 'resources.update'({ id, sub }) {
      const r = find(id, await resourcesOf(id), sub)
      throw fail('resource_token_unsupported', r.id, r.type)
    },

    'resources.add': ({ id, body, key, rid }) =>
      serial(id, async () => {
        const rsc = addedResourceId(id, key)
        const mountPath = mountPathOf(body)
        // A retry of an add that was stored answers as the first did, whatever the session does now.
        const prior = (await live(id)).h.session.resources.find((r) => r.id === rsc)
        if (prior) {
          if (prior.file_id !== body.file_id || prior.mount_path !== mountPath) throw fail('idempotency_key_reused')
          return prior
        }
        const addable = async () => {
          const actor = await changeable(id)
          const all = actor.h.session.resources
          if (all.length >= MAX_SESSION_RESOURCES) throw fail('too_many_resources', MAX_SESSION_RESOURCES)
          const clash = all.find((r) => mountsOverlap(r.mount_path, mountPath))
          if (clash) throw fail('mount_path_conflict', 'mount_path', mountPath, clash.id, clash.mount_path)
          return actor
        }
        await addable()
        const t = now()
        const r: FileResource = { id: rsc, type: 'file', file_id: body.file_id, mount_path: mountPath, created_at: t, updated_at: t }
        await copyFor(deps.ctx.client, id, r, 'file_id', rid)
        // The copy took a while: the session may have started a turn, been archived, or left memory (then its
        // successor, rebuilt from the record, takes the change).
        const actor = await addable().catch(async (err) => {
          await dropCopies(deps, id, [r], rid)
          throw err
        })
        actor.h.session.resources = [...actor.h.session.resources, r]
        await actor.save()
        return r
      }),

    'resources.delete': ({ id, sub, rid }) =>
      serial(id, async () => {
        const actor = await changeable(id)
        const r = find(id, actor.h.session.resources, sub)
        actor.h.session.resources = actor.h.session.resources.filter((x) => x.id !== r.id)
        await actor.save()
        // The record no longer lists it: its copy goes (its file, at the next tool run: actors/workdir/mounts.ts).
        await dropCopies(deps, id, [r], rid)
        return { id: r.id, type: 'session_resource_deleted' as const }
      }),
  }
}

const notFound = (id: string, sessionId: string): never => {
  throw fail('session_resource_not_found', id, sessionId)
}
