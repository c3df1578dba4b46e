import { type } from 'arktype'
import { limitParam, pageParam } from './common.js'
import { FileId, SessionId, SessionResourceId } from './ids.js'
import { listParam } from './events.js'
import { isUploadObjectOf } from '../files.js'
import { lazy } from './lazy.js'

/** At most this many `ids[]` in one list (WIRE §10). */
export const MAX_LIST_IDS = 100

/** `GET /v1/files`: `ids[]` asks for those files as one page (no `limit` or `page` beside it). */
export const FileListQuery = lazy(() =>
  type({
    'limit?': limitParam(1000),
    'page?': pageParam,
    'scope_id?': SessionId,
    'ids?': listParam(FileId).pipe(type(`string[] <= ${MAX_LIST_IDS}`)),
  }).narrow(
    (q, ctx) =>
      q.ids === undefined ||
      (q.limit === undefined && q.page === undefined) ||
      ctx.reject({ path: ['ids'], expected: 'ids[] without limit or page', actual: 'ids[] with limit or page' }),
  ),
)

/**
 * What the gateway records once an upload's bytes are stored whole (internal: the create op's body, never a
 * client's). `object` is the object holding them (protocol/files.ts#uploadObjectName: the id, a `.` and a fresh
 * suffix, so it can name no other file's object); without it, the object named like the id (session outputs). With
 * `digest` (the object's SHA-256, as the store computed it) it is what tells a retry of the upload (the same
 * Idempotency-Key, so the same id) from another upload under a reused key.
 */
export const FileRecordInput = lazy(() =>
  type({
    '+': 'reject',
    id: FileId,
    filename: 'string',
    mime_type: 'string',
    size_bytes: 'number.integer >= 0',
    'scope_id?': SessionId,
    'object?': 'string',
    'digest?': /^SHA-256=[A-Za-z0-9_-]+=*$/,
  }).narrow(
    (r, ctx) =>
      r.object === undefined ||
      isUploadObjectOf(r.id, r.object) ||
      ctx.reject({ path: ['object'], expected: `the file's id, "." and 26 characters`, actual: JSON.stringify(r.object.slice(0, 80)) }),
  ),
)

/**
 * Internal (the session kind, for a file resource; no route): an independent copy of `source_id`'s bytes and
 * metadata as the file `id`, scoped to session `scope_id`. The caller derives `id` from the session and the
 * resource, so a repeated copy finds the first and makes no second. `resource_id` is kept with the copy (never shown)
 * so a copy whose resource never came to be, or is gone, can be found and swept.
 */
export const FileCopyInput = lazy(() =>
  type({
    '+': 'reject',
    id: FileId,
    source_id: FileId,
    scope_id: SessionId,
    resource_id: SessionResourceId,
  }),
)

export type FileListInput = typeof FileListQuery.infer
export type FileRecordInputT = typeof FileRecordInput.infer
export type FileCopyInputT = typeof FileCopyInput.infer

/** What a download needs (internal: the file kind's `content`): the file, and the object its bytes are in. */
export interface FileContent {
  file: FileMetadata
  object: string
}

/** A file on the wire (WIRE §10). */
export interface FileMetadata {
  id: string
  type: 'file'
  filename: string
  mime_type: string
  size_bytes: number
  created_at: string
  downloadable: boolean
  expires_at: string | null
  scope: { type: 'session'; id: string } | null
}
