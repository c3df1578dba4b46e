import { decodeCursor, encodeCursor, isRecordPosition } from '../../../protocol/cursor.js'
import { fail } from '../../../protocol/errors/fail.js'
import { idFromKey, newId } from '../../../protocol/ids.js'
import type { SessionKind } from '../../../protocol/ops/session.js'
import type { Page } from '../../../protocol/page.js'
import { type FileResource, fileResources, mountPathOf, type ResourceListInput, type SessionResource } from '../../../protocol/schemas/resource.js'
import { now } from '../../../protocol/time.js'
import type { Handlers } from '../../kit/index.js'
import type { SessionActor } from '../actor/index.js'
import type { ActorDeps } from '../actor/index.js'
import { copyFor, dropCopies } from '../admission/index.js'
import { sessionKey } from '../history/index.js'

/**
 * Where a resource stands in its session's list, for a cursor: a file by its id and time; a memory store (no id, no
 * time on the wire, attached at creation and never removed) by its store's id, which is unique in the session, and
 * the session's own time.
 */
const positionOf = (r: SessionResource, createdAt: string) =>
  r.type === 'file' ? { id: r.id, created_at: r.created_at } : { id: r.memory_store_id, created_at: createdAt }

/** One page of a session's resources, in the order they were attached. */
function pageOfResources(sessionId: string, createdAt: string, all: readonly SessionResource[], q: ResourceListInput): Page<SessionResource> {
  const filters = { session_id: sessionId }
  const after = decodeCursor('session_resources', filters, q.page, isRecordPosition)
  let start = 0
  if (after) {
    const i = all.findIndex((r) => positionOf(r, createdAt).id === after.id)
    // The last one shown is gone since: carry on from the first attached after it.
    start = i >= 0 ? i + 1 : all.findIndex((r) => positionOf(r, createdAt).created_at > after.created_at)
    if (start < 0) start = all.length
  }
  const data = all.slice(start, start + (q.limit ?? 20))
  const last = data.at(-1)
  const more = start + data.length < all.length
  return { data, next_page: more && last ? encodeCursor('session_resources', filters, positionOf(last, createdAt)) : null }
}

type ResourceOps = Pick<Handlers<typeof SessionKind>, 'resources.list' | 'resources.add' | 'resources.get' | 'resources.update' | 'resources.delete'>

/** The id of an added resource: from its Idempotency-Key, so a retry names the same resource. */
const addedResourceId = (sessionId: string, key: string | undefined) =>
  key === undefined ? newId('sesrsc') : idFromKey('sesrsc', 'sessions.resources.add', `${sessionId}/${key}`)

/**
 * The resources routes (WIRE §9). Reads answer from the actor in memory, else from the record (resources change only
 * by the record's writes), without waking the session. Adds and deletes are the actor's to make (`addResource`,
 * `removeResource`: one change at a time per session, only while it is idle); the record that lists the change is
 * written before the reply, and the files are mounted (or removed) before its next tool runs
 * (actors/workdir/mounts.ts).
 */
export function resourceOps(deps: ActorDeps, peek: (id: string) => SessionActor | undefined, live: (id: string) => Promise<SessionActor>): ResourceOps {
  const sessionOf = async (id: string): Promise<{ resources: readonly SessionResource[]; created_at: string }> => {
    const a = peek(id)
    if (a) return a.view()
    const cur = await deps.store.peek(sessionKey(id))
    if (!cur) throw fail('session_not_found', id)
    return cur.value.session
  }
  const resourcesOf = async (id: string) => (await sessionOf(id)).resources
  // Only files have ids (WIRE §9: a memory store resource has none), so only they are found by one.
  const find = (id: string, all: readonly SessionResource[], rid: string) => fileResources(all).find((r) => r.id === rid) ?? notFound(rid, id)

  return {
    async 'resources.list'({ id, query }) {
      const s = await sessionOf(id)
      return pageOfResources(id, s.created_at, s.resources, query)
    },

    async 'resources.get'({ id, sub }) {
      return find(id, await resourcesOf(id), sub)
    },

    async 'resources.update'({ id, sub }) {
      const r = find(id, await resourcesOf(id), sub)
      throw fail('resource_token_unsupported', r.id, r.type)
    },

    async 'resources.add'({ id, body, key, rid }) {
      const t = now()
      const r: FileResource = { id: addedResourceId(id, key), type: 'file', file_id: body.file_id, mount_path: mountPathOf(body), created_at: t, updated_at: t }
      return (await live(id)).addResource(r, {
        make: () => copyFor(deps.ctx.client, id, r, 'file_id', rid),
        drop: () => dropCopies(deps.ctx, id, [r], rid),
      })
    },

    async 'resources.delete'({ id, sub, rid }) {
      const r = await (await live(id)).removeResource(sub)
      // The record no longer lists it: its copy goes (its file, at the next tool run: actors/workdir/mounts.ts).
      await dropCopies(deps.ctx, id, [r], rid)
      return { id: r.id, type: 'session_resource_deleted' as const }
    },
  }
}

const notFound = (id: string, sessionId: string): never => {
  throw fail('session_resource_not_found', id, sessionId)
}
