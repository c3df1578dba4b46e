import type { JetStreamManager } from '@nats-io/jetstream'
import type { ObjectStore } from '@nats-io/obj'
import { ObjectStores, objectChunkPrefix, objectMetaPrefix, objectStream } from '../../protocol/subjects.js'
import { clearSubject, type ObjectMeta, ObjectWrites } from '../kit/index.js'
import { objectOf, type StoredFile } from './state.js'

/**
 * Whether a file record names `object`. An object is named for its file (the id, alone or before a `.`:
 * protocol/files.ts#uploadObjectName), so its one possible record is the one of that id, and it is named when it is
 * the object that record's bytes are in (by its `object`, else by its id).
 */
export const fileNames = (f: StoredFile, object: string): boolean => objectOf(f) === object

/**
 * Whether the record of `object`'s owner (the id before the first `.`) names it: the projection's copy first, then,
 * when that does not, the record as the bucket's leader holds it: a projection may be behind (a watch that lost its
 * place in a NATS fault), and its not naming an object is never enough to delete it.
 */
export const namedAtSource =
  <T>(records: { get(id: string): T | undefined; atSource(id: string): Promise<T | undefined> }, names: (record: T, object: string) => boolean) =>
  async (object: string): Promise<boolean> => {
    const id = object.split('.', 1)[0]!
    const cached = records.get(id)
    if (cached !== undefined && names(cached, object)) return true
    const stored = await records.atSource(id)
    return stored !== undefined && names(stored, object)
  }

/** How old bytes without a record must be before they are swept: far longer than recording an upload takes. */
export const ORPHAN_AGE_MS = 10 * 60_000

/**
 * Removes bytes no file record names, older than `ageMs`: an object whose record was never written (the host died
 * between the two writes), or was deleted without its object, or was written by another upload with the same
 * Idempotency-Key (an attempt that lost and died before discarding its object); and chunks no meta entry names: of an
 * upload that never finished (a killed process: the store deletes them itself on any failure it lives through), or of
 * an object replaced or deleted by a write cut short (kit/object-writes.ts). A live upload writes a chunk at least every
 * few seconds, so chunks whose newest is `ageMs` old belong to none. `named(object)`: whether a record names the object
 * (actors/file/state.ts#objectOf).
 */
export async function sweepOrphans(
  os: ObjectStore,
  jsm: JetStreamManager,
  named: (object: string) => boolean | Promise<boolean>,
  ageMs = ORPHAN_AGE_MS,
  /** The object store's name (default the files'). */
  store: string = ObjectStores.files,
  /** Collects the names of the objects swept (for the log line). */
  gone: string[] = [],
): Promise<number> {
  const before = Date.now() - ageMs
  // Deletes by sequence, never a subject purge (kit/sequence-deletes.ts).
  const writes = new ObjectWrites(jsm.jetstream(), store)
  let swept = 0
  const live = new Set<string>()
  for (const info of await os.list()) {
    if (Date.parse(info.mtime) > before || (await named(info.name))) live.add(info.nuid)
    else if (
      await writes.delete(info.name).then(
        () => true,
        () => false,
      )
    ) {
      swept++
      gone.push(info.name)
    }
  }
  await dropSuperseded(jsm, writes)
  const stream = objectStream(store)
  const chunkPrefix = objectChunkPrefix(store)
  const si = await jsm.streams.info(stream, { subjects_filter: `${chunkPrefix}>` })
  const unlisted = Object.keys(si.state.subjects ?? {}).filter((subject) => !live.has(subject.slice(chunkPrefix.length)))
  if (!unlisted.length) return swept
  // Chunks no listed object names. The list came through a consumer that may sit on a replica still catching up, and
  // an object missing from a short list must not lose its chunks: the stream leader's meta entries decide.
  const atLeader = await objectsAtLeader(jsm, stream, store)
  if (!atLeader) return swept
  for (const subject of unlisted) {
    if (atLeader.has(subject.slice(chunkPrefix.length))) continue
    const last = await jsm.streams.getMessage(stream, { last_by_subj: subject }).catch(() => null)
    if (!last || last.time.getTime() > before) continue
    await clearSubject(jsm, stream, subject)
    swept++
  }
  return swept
}

/**
 * The meta entries a write cut short left before a name's last (readers take the last), with the chunks they name: the
 * next write of the name would remove them, and most names are written once.
 */
async function dropSuperseded(jsm: JetStreamManager, writes: ObjectWrites): Promise<void> {
  const metas = await jsm.streams.info(writes.stream, { subjects_filter: `${objectMetaPrefix(writes.store)}>` })
  for (const [subject, entries] of Object.entries(metas.state.subjects ?? {})) {
    if (entries < 2) continue
    const last = await jsm.streams.getMessage(writes.stream, { last_by_subj: subject })
    if (!last) continue
    const info = last.json<ObjectMeta>()
    await writes.supersede(info.name, last.seq, 'entries and chunks', info.deleted ? undefined : info.nuid)
  }
}

/** The nuids of the objects the stream's leader holds (not deleted), meta entry by meta entry; undefined if one cannot be read. */
async function objectsAtLeader(jsm: JetStreamManager, stream: string, store: string): Promise<Set<string> | undefined> {
  const metas = await jsm.streams.info(stream, { subjects_filter: `${objectMetaPrefix(store)}>` })
  const nuids = new Set<string>()
  for (const subject of Object.keys(metas.state.subjects ?? {})) {
    const m = await jsm.streams.getMessage(stream, { last_by_subj: subject }).catch(() => null)
    if (!m) return undefined
    const info = JSON.parse(new TextDecoder().decode(m.data)) as { nuid: string; deleted?: boolean }
    if (!info.deleted) nuids.add(info.nuid)
  }
  return nuids
}
