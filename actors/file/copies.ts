import { isApiError } from '../../protocol/errors/api-error.js'
import { FileKind } from '../../protocol/ops/file.js'
import { SessionKind } from '../../protocol/ops/session.js'
import { idFromKey } from '../../protocol/ids.js'
import type { ActorClient } from '../kit/index.js'
import type { StoredFile } from './state.js'

/** The id of the copy made for a session's resource: derived, so a retried copy or a later delete finds it. */
export const copyIdOf = (sessionId: string, resourceId: string) => idFromKey('file', 'session_resource_copy', `${sessionId}/${resourceId}`)

/**
 * A session resource's copy is made before the resource is stored (a session create's copies before its record, an
 * added resource's before the record that lists it) and deleted after it is dropped: a host killed in between leaves
 * a copy no resource names. Those are swept once they are `COPY_MIN_AGE_MS` old, far longer than any create's copies
 * take, and looked for until `COPY_MAX_AGE_MS`, so that each copy costs a bounded number of looks (one per sweep, on
 * each host, for a day) rather than one every sweep for ever.
 */
export const COPY_MIN_AGE_MS = 60 * 60_000
export const COPY_MAX_AGE_MS = 24 * 60 * 60_000

/** Deletes the copies of `files` whose session or resource is gone; how many. */
export async function sweepCopies(files: readonly StoredFile[], client: ActorClient, at = Date.now()): Promise<number> {
  let swept = 0
  for (const f of files) {
    const age = at - Date.parse(f.created_at)
    if (!f.resource_id || f.scope?.type !== 'session' || age < COPY_MIN_AGE_MS || age > COPY_MAX_AGE_MS) continue
    const gone = await client.call(SessionKind.ops['resources.get'], { id: f.scope.id, sub: f.resource_id }).then(
      () => false,
      // Only a 404 (the session or its resource) says so; anything else says nothing yet.
      (err: unknown) => isApiError(err) && err.status === 404,
    )
    if (!gone) continue
    await client.call(FileKind.ops.delete, { id: f.id }).catch(() => undefined)
    swept++
  }
  return swept
}
