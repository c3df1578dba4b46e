import type { KV } from '@nats-io/kv'
import type { ObjectStore } from '@nats-io/obj'
import { fail } from '../../protocol/errors/fail.js'
import type { FileKind } from '../../protocol/ops/file.js'
import type { FileMetadata } from '../../protocol/schemas/file.js'
import { now } from '../../protocol/time.js'
import type { Handlers } from '../kit/ops.js'
import { pageOf } from '../kit/page.js'
import type { Projection } from '../kit/projection.js'
import { RecordStore } from '../kit/store.js'
import { fileKey, type StoredFile } from './state.js'

export function fileOps(kv: KV, objects: ObjectStore, projection: Projection<FileMetadata>): Handlers<typeof FileKind> {
  const store = new RecordStore<StoredFile>(kv)
  const missing = (id: string): never => {
    throw fail('file_not_found', id)
  }

  return {
    async create({ body: b }) {
      const file: FileMetadata = {
        id: b.id,
        type: 'file',
        filename: b.filename,
        mime_type: b.mime_type,
        size_bytes: b.size_bytes,
        created_at: now(),
        downloadable: true,
        expires_at: null,
        scope: b.scope_id ? { type: 'session', id: b.scope_id } : null,
      }
      if ((await store.create(fileKey(b.id), file)) !== false) return file
      // The id came from an Idempotency-Key whose first upload was recorded: answer as it was answered.
      const cur = await store.get(fileKey(b.id))
      return cur ? cur.value : missing(b.id)
    },

    async get({ id }) {
      const cur = await store.get(fileKey(id))
      return cur ? cur.value : missing(id)
    },

    async list({ query: q }) {
      await projection.fresh()
      if (q.ids) {
        const wanted = new Set(q.ids)
        const data = projection.list().filter((f) => wanted.has(f.id) && (!q.scope_id || f.scope?.id === q.scope_id))
        return { data, next_page: null }
      }
      const scope = q.scope_id ?? null
      return pageOf(projection, 'files', { scope_id: scope }, q.page, q.limit ?? 20, (f) => scope === null || f.scope?.id === scope)
    },

    async delete({ id }) {
      const cur = await store.get(fileKey(id))
      if (!cur) missing(id)
      // The record goes first: from then on the file is 404 everywhere. Bytes left behind by a failure here are
      // swept as orphans (actors/file/sweep.ts).
      if ((await store.delete(fileKey(id), cur!.revision)) === false) missing(id)
      await objects.delete(id).catch(() => undefined)
      return { id, type: 'file_deleted' as const }
    },
  }
}
