import type { KV } from '@nats-io/kv'
import { fail } from '../../protocol/errors/fail.js'
import type { FileKind } from '../../protocol/ops/file.js'
import { type FileCopyInputT, type FileMetadata, FileRecordInput } from '../../protocol/schemas/file.js'
import { now } from '../../protocol/time.js'
import { parse } from '../../protocol/validate.js'
import { casLoop, type Handlers, LOST, pageOf, type Projection, RecordStore } from '../kit/index.js'
import { type FileObjects, pulled, sameDigest } from './bytes.js'
import { fileKey, objectOf, type StoredFile, view } from './state.js'

export function fileOps(kv: KV, bytes: FileObjects, projection: Projection<StoredFile>): Handlers<typeof FileKind> {
  const store = new RecordStore<StoredFile>(kv)
  const missing = (id: string): never => {
    throw fail('file_not_found', id)
  }
  /** Copies in progress here, by the copy's id: a retry that arrives meanwhile waits for the first, never copies twice. */
  const copying = new Map<string, Promise<FileMetadata>>()

  /**
   * The copy `b.id` of `b.source_id`: found if made before (the id is the caller's, derived from what it copies for),
   * else its bytes streamed from the source's object into its own (one chunk at a time; nats.js writes the object's
   * meta entry only after the last chunk), then its record created, as an upload's is once its bytes are whole.
   */
  async function copyOnce(b: FileCopyInputT): Promise<FileMetadata> {
    const had = await store.get(fileKey(b.id))
    if (had) return view(had.value)
    const src = (await store.get(fileKey(b.source_id)))?.value ?? missing(b.source_id)
    const chunks = (await bytes.read(objectOf(src))) ?? missing(b.source_id)
    await bytes.put(b.id, pulled(chunks)).catch(async (err) => {
      // The source deleted midway: its chunks went with it (nats.js purged what was written of the copy).
      if (!(await store.get(fileKey(b.source_id)))) missing(b.source_id)
      throw err
    })
    const file: StoredFile = { ...view(src), id: b.id, created_at: now(), scope: { type: 'session', id: b.scope_id }, resource_id: b.resource_id }
    if ((await store.create(fileKey(b.id), file)) !== false) return view(file)
    return view((await store.get(fileKey(b.id)))?.value ?? missing(b.id))
  }

  /**
   * `cur`, recorded by the upload with the Idempotency-Key `attempt` has too (so the same id), when `attempt` is that
   * upload again (the same bytes, by digest and size, under the same name and type); else the key was reused for
   * another upload: 422. Either way the attempt's own object goes, as no record will name it. An attempt naming the
   * recorded object is that request itself again (a re-sent create, or a writer whose objects are named by the id,
   * which stores the same bytes each time): nothing of it to discard.
   */
  async function retried(cur: StoredFile, attempt: StoredFile): Promise<FileMetadata> {
    if (objectOf(cur) === objectOf(attempt)) return view(cur)
    // A record from before digests were kept: its object's own.
    const digest = cur.digest ?? (await bytes.digest(objectOf(cur)))
    const same =
      digest !== undefined &&
      attempt.digest !== undefined &&
      sameDigest(digest, attempt.digest) &&
      cur.size_bytes === attempt.size_bytes &&
      cur.filename === attempt.filename &&
      cur.mime_type === attempt.mime_type &&
      cur.scope?.id === attempt.scope?.id
    await bytes.discard(objectOf(attempt)).catch(() => undefined)
    if (!same) throw fail('idempotency_key_reused')
    return view(cur)
  }

  return {
    async create({ body }) {
      // Checked here too, though its callers built it: a record naming another file's object would keep that
      // object from the sweep, and a delete of this file would take its bytes.
      const b = parse(FileRecordInput, body)
      const file: StoredFile = {
        id: b.id,
        type: 'file',
        filename: b.filename,
        mime_type: b.mime_type,
        size_bytes: b.size_bytes,
        created_at: now(),
        downloadable: true,
        expires_at: null,
        scope: b.scope_id ? { type: 'session', id: b.scope_id } : null,
        ...(b.object === undefined ? {} : { object: b.object }),
        ...(b.digest === undefined ? {} : { digest: b.digest }),
      }
      // The record's create is the compare-and-set between two uploads with one Idempotency-Key (so one id): the
      // first recorded wins, the other is its retry or a reused key. An attempt's object no record names (it lost
      // and died before discarding it) is swept as an orphan (sweep.ts).
      return casLoop(async () => {
        if ((await store.create(fileKey(b.id), file)) !== false) return view(file)
        const cur = await store.get(fileKey(b.id))
        // Deleted since the create failed: nothing to be a retry of, so this one is recorded.
        return cur ? retried(cur.value, file) : LOST
      })
    },

    copy({ body: b }) {
      let running = copying.get(b.id)
      if (!running) {
        running = copyOnce(b).finally(() => copying.delete(b.id))
        copying.set(b.id, running)
      }
      return running
    },

    async get({ id }) {
      const cur = await store.get(fileKey(id))
      return cur ? view(cur.value) : missing(id)
    },

    async content({ id }) {
      const cur = await store.get(fileKey(id))
      return cur ? { file: view(cur.value), object: objectOf(cur.value) } : missing(id)
    },

    async list({ query: q }) {
      await projection.fresh()
      if (q.ids) {
        const wanted = new Set(q.ids)
        const data = projection
          .list()
          .filter((f) => wanted.has(f.id) && (!q.scope_id || f.scope?.id === q.scope_id))
          .map(view)
        return { data, next_page: null }
      }
      const scope = q.scope_id ?? null
      return pageOf(projection, 'files', { scope_id: scope }, q.page, q.limit ?? 20, (f) => scope === null || f.scope?.id === scope, view)
    },

    async delete({ id }) {
      const cur = await store.get(fileKey(id))
      if (!cur) missing(id)
      // The record goes first: from then on the file is 404 everywhere. Bytes left behind by a failure here are
      // swept as orphans (actors/file/sweep.ts).
      if ((await store.delete(fileKey(id), cur!.revision)) === false) missing(id)
      await bytes.discard(objectOf(cur!.value)).catch(() => undefined)
      return { id, type: 'file_deleted' as const }
    },
  }
}
