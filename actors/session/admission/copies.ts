import { inField } from '../../../protocol/errors/fail.js'
import { idFromKey } from '../../../protocol/ids.js'
import { FileKind } from '../../../protocol/ops/file.js'
import { type FileResource, fileResources, isFileParams, mountPathOf, type ResourceParamsT, type SessionResource } from '../../../protocol/schemas/resource.js'
import { copyIdOf } from '../../file/index.js'
import type { ActorClient, HostContext } from '../../kit/index.js'

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

/** Copies the file of one resource for the session (or finds the copy made before): 404 naming `field`. */
export function copyFor(client: ActorClient, sessionId: string, r: FileResource, field: string, rid: string): Promise<unknown> {
  const body = { id: copyIdOf(sessionId, r.id), source_id: r.file_id, scope_id: sessionId, resource_id: r.id }
  return client.call(FileKind.ops.copy, { body, rid }).catch(inField(field))
}

/** Deletes the copies of `resources`, as far as it can: what a failure leaves, the file kind sweeps (actors/file/copies.ts). */
export async function dropCopies(
  ctx: Pick<HostContext, 'client' | 'log'>,
  sessionId: string,
  resources: readonly SessionResource[],
  rid: string,
): Promise<void> {
  for (const r of fileResources(resources)) {
    await ctx.client.call(FileKind.ops.delete, { id: copyIdOf(sessionId, r.id), rid }).catch((err: unknown) => {
      if ((err as { status?: number }).status !== 404)
        ctx.log.warn({ session: sessionId, resource: r.id, err, rid }, 'a resource copy was not deleted; it is swept later')
    })
  }
}

/**
 * The file resources of a new session by their index in `resources`, each file copied (admission: a file that does not exist is a 404 naming
 * `resources[i].file_id`, as the environment's is). The checks that need no stored state (kinds, mount paths) ran
 * before. A copy that fails takes back the copies made before it.
 */
export async function attachFiles(
  ctx: Pick<HostContext, 'client' | 'log'>,
  sessionId: string,
  params: readonly ResourceParamsT[],
  at: string,
  rid: string,
): Promise<Map<number, FileResource>> {
  const made = new Map<number, FileResource>()
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
      await copyFor(ctx.client, sessionId, r, `resources[${i}].file_id`, rid)
    } catch (err) {
      await dropCopies(ctx, sessionId, [...made.values()], rid)
      throw err
    }
    made.set(i, r)
  }
  return made
}
