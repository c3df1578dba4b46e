import type { Page } from '../page.js'
import { type FileMetadata, FileCopyInput, FileListQuery, FileRecordInput } from '../schemas/file.js'
import { defineKind, returns } from './define.js'

/**
 * Files: any host serves any file. The bytes never travel over the actor wire: the gateway streams an upload into
 * the object store and then asks `create` to record it, and streams a download out of the store once `get` said the
 * file exists (protocol/files.ts).
 */
export const FileKind = defineKind(
  'file',
  { param: 'file_id', prefix: 'file', noun: 'File' },
  {
    /** Records a file whose bytes are stored whole under its id (the gateway, after an upload). */
    create: { placement: 'any', body: FileRecordInput, reply: returns<FileMetadata>() },
    /**
     * Internal (the session kind; no route): copies a file's bytes, object store to object store as they are read,
     * under a new id scoped to a session. Idempotent by the new id.
     */
    copy: { placement: 'any', body: FileCopyInput, reply: returns<FileMetadata>() },
    list: { placement: 'any', query: FileListQuery, reply: returns<Page<FileMetadata>>() },
    get: { placement: 'any', reply: returns<FileMetadata>() },
    delete: { placement: 'any', reply: returns<{ id: string; type: 'file_deleted' }>() },
  },
)
