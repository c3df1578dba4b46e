import { jetstreamManager } from '@nats-io/jetstream'
import { Kvm } from '@nats-io/kv'
import { Objm } from '@nats-io/obj'
import { connect } from '@nats-io/transport-node'
import t from 'tap'
import { actorClient } from '../../actors/kit/client.js'
import { Projection } from '../../actors/kit/projection.js'
import { actorWire } from '../../actors/kit/wire.js'
import { FILE_PREFIX, type StoredFile } from '../../actors/file/state.js'
import { fileNames, namedAtSource, sweepOrphans } from '../../actors/file/sweep.js'
import { decode, encode } from '../../protocol/codec.js'
import { uploadObjectName } from '../../protocol/files.js'
import { idFromKey, newId } from '../../protocol/ids.js'
import { FileKind } from '../../protocol/ops/file.js'
import { Buckets, ObjectStores } from '../../protocol/subjects.js'
import { failure } from '../agents/_util.js'
import { stack } from '../helpers/stack.js'

/**
 * `POST /v1/files` with an Idempotency-Key: the id comes from the key, but each attempt stores its bytes in an object
 * of its own and the record names the one it keeps. A retry (the same bytes, name and type) is the first file and
 * leaves one object; the key reused for another upload is a 422 that changes nothing of the first; two at once are
 * decided by the record's write. Records from before objects were named per attempt still read, and the orphan sweep
 * keeps every recorded object and removes attempts' objects no record names.
 */
const s = await stack()
const files = s.client.beta.files
const nc = await connect({ servers: s.nats.url })
t.teardown(() => nc.close())
const jsm = await jetstreamManager(nc)
const os = await new Objm(nc).open(ObjectStores.files)
const kv = await new Kvm(nc).open(Buckets.files)
// Over NATS, as another host would call.
const client = actorClient({ wire: actorWire(nc), local: () => undefined })

const keyed = (key: string, bytes: Uint8Array<ArrayBuffer>, name = 'f.bin', type = 'application/octet-stream') =>
  files.upload({ file: new File([bytes], name, { type }) }, { headers: { 'Idempotency-Key': key } })
const download = async (id: string) => new Uint8Array(await (await files.download(id)).arrayBuffer())
/** The objects in the store for the file `id`: the one named like it, and its uploads' attempts. */
const objectsOf = async (id: string) =>
  (await os.list())
    .map((o) => o.name)
    .filter((n) => n === id || n.startsWith(`${id}.`))
    .sort()
const stored = async (id: string) => {
  const e = await kv.get(`${FILE_PREFIX}${id}`)
  return e && e.length > 0 ? decode<StoredFile>(e.value) : undefined
}
const bytesOf = (n: number, fill: number) => new Uint8Array(n).fill(fill)

t.test('the same key and the same upload: the same file, one object', async (t) => {
  const key = `same-${newId('k')}`
  const bytes = bytesOf(3000, 7)
  const first = await keyed(key, bytes)
  const again = await keyed(key, bytes)
  t.same(again, first, 'the retry answers the first file')
  t.same(await download(first.id), bytes)
  const objects = await objectsOf(first.id)
  t.equal(objects.length, 1, 'the retry stored nothing that stays')
  const rec = await stored(first.id)
  t.equal(rec?.object, objects[0], 'the record names the object')
  t.match(rec?.digest, /^SHA-256=/, 'and keeps its digest')
  t.notOk('object' in first || 'digest' in first, 'neither is shown')
})

t.test('the same key, another upload: 422 naming the header; the first file keeps its own bytes', async (t) => {
  const key = `other-${newId('k')}`
  const bytes = bytesOf(2048, 1)
  const first = await keyed(key, bytes, 'a.bin', 'application/x-a')
  const cases: Array<[string, Promise<unknown>]> = [
    ['other bytes of the same size', keyed(key, bytesOf(2048, 2), 'a.bin', 'application/x-a')],
    ['other bytes of another size', keyed(key, bytesOf(10, 1), 'a.bin', 'application/x-a')],
    ['another filename', keyed(key, bytes, 'b.bin', 'application/x-a')],
    ['another type', keyed(key, bytes, 'a.bin', 'application/x-b')],
  ]
  for (const [what, p] of cases) {
    const err = await failure(p)
    t.equal(err.status, 422, what)
    t.equal(err.error?.error?.type, 'invalid_request_error', what)
    t.match(err.error?.error?.message, /^Idempotency-Key header: /, what)
  }
  t.same(await files.retrieveMetadata(first.id), first, 'the record is the first')
  t.same(await download(first.id), bytes, 'the first bytes download')
  t.equal((await objectsOf(first.id)).length, 1, "the refused attempts' objects are gone")
})

t.test('two uploads with one key at once: one wins, the other is it again or a 422', async (t) => {
  for (let round = 0; round < 4; round++) {
    const same = bytesOf(100_000 + round, 3)
    const key = `race-same-${round}-${newId('k')}`
    const [a, b] = await Promise.all([keyed(key, same), keyed(key, same)])
    t.same(a, b, `round ${round}, the same bytes: one file`)
    t.same(await download(a.id), same)
    t.equal((await objectsOf(a.id)).length, 1, `round ${round}: one object`)

    const key2 = `race-other-${round}-${newId('k')}`
    const x = bytesOf(100_000, 4)
    const y = bytesOf(100_000, 5)
    const [rx, ry] = await Promise.allSettled([keyed(key2, x), keyed(key2, y)])
    const won = [rx, ry].filter((r) => r.status === 'fulfilled')
    const lost = [rx, ry].filter((r) => r.status === 'rejected')
    t.equal(won.length, 1, `round ${round}, other bytes: one wins`)
    t.equal(lost.length, 1)
    t.equal((lost[0] as PromiseRejectedResult).reason.status, 422)
    const winner = (won[0] as PromiseFulfilledResult<{ id: string }>).value
    t.same(await download(winner.id), rx.status === 'fulfilled' ? x : y, "exactly the winner's bytes")
    t.equal((await objectsOf(winner.id)).length, 1, `round ${round}: the loser's object is gone`)
  }
})

t.test('two records of one id asked for at once, both objects stored first: one record, one object', async (t) => {
  // The race decided at the record's write alone: both attempts' bytes are whole before either is recorded.
  const id = newId('file')
  const objects = [uploadObjectName(id), uploadObjectName(id)]
  const digests: string[] = []
  for (const o of objects) digests.push((await os.put({ name: o }, new Blob([bytesOf(5, 9)]).stream())).digest)
  const body = (i: number) => ({ id, object: objects[i]!, digest: digests[i]!, filename: 'r.bin', mime_type: 'application/octet-stream', size_bytes: 5 })
  const [a, b] = await Promise.all([client.call(FileKind.ops.create, { body: body(0) }), client.call(FileKind.ops.create, { body: body(1) })])
  t.same(a, b)
  const kept = (await stored(id))?.object
  t.same(await objectsOf(id), [kept], 'the object the record names, and only it')
})

t.test('create refuses an object that is not one of its file', async (t) => {
  const id = newId('file')
  for (const object of [newId('file'), `${newId('file')}.${'A'.repeat(26)}`, `${id}.short`, `${id}.${'a'.repeat(26)}`]) {
    const err = await failure(client.call(FileKind.ops.create, { body: { id, object, filename: 'x', mime_type: 'text/plain', size_bytes: 0 } }))
    t.equal(err.status, 400, object)
    t.match(err.message, /^object must be the file's id/, object)
  }
  t.equal(await stored(id), undefined, 'nothing recorded')
})

/** A file as stored before objects were named per attempt: its bytes in the object named like its id, no `object`. */
async function storeLegacy(id: string, bytes: Uint8Array<ArrayBuffer>) {
  await os.put({ name: id }, new Blob([bytes]).stream())
  const legacy = {
    id,
    type: 'file',
    filename: 'old.bin',
    mime_type: 'application/octet-stream',
    size_bytes: bytes.length,
    created_at: new Date().toISOString(),
    downloadable: true,
    expires_at: null,
    scope: null,
  }
  await kv.create(`${FILE_PREFIX}${id}`, encode(legacy))
  return legacy
}

t.test('a file recorded before objects were named per attempt: its bytes under its id, no object in its record', async (t) => {
  const key = `legacy-${newId('k')}`
  const id = idFromKey('file', 'files.upload', key)
  const bytes = bytesOf(1500, 6)
  const legacy = await storeLegacy(id, bytes)
  t.same(await files.retrieveMetadata(id), legacy)
  t.same(await download(id), bytes, 'it downloads')
  t.same(await keyed(key, bytes, 'old.bin'), legacy, 'a retry of its upload is it (its digest is its object’s)')
  t.equal((await failure(keyed(key, bytesOf(1500, 8), 'old.bin'))).status, 422, 'another upload under its key is refused')
  t.same(await objectsOf(id), [id], "the attempts' objects are gone, its own stays")
  t.same(await download(id), bytes)
  await files.delete(id)
  t.same(await objectsOf(id), [], 'a delete removes the object named like it')
})

t.test('a keyed upload deleted, then sent again with its key: stored again, as a new upload', async (t) => {
  const key = `deleted-${newId('k')}`
  const first = await keyed(key, bytesOf(10, 1))
  await files.delete(first.id)
  t.same(await objectsOf(first.id), [], 'the delete removed the object the record named')
  const again = await keyed(key, bytesOf(20, 2), 'later.bin')
  t.equal(again.id, first.id, 'the same id: it comes from the key')
  t.equal(again.filename, 'later.bin')
  t.same(await download(again.id), bytesOf(20, 2))
})

t.test('the orphan sweep: recorded objects stay, attempts no record names go', async (t) => {
  // Whatever this file stored so far, a file from before and a resource's copy (both in objects named like their
  // ids), plus what kills would leave: an attempt that lost the record's write and died before discarding its
  // object, and one that died before its record.
  const plain = await files.upload({ file: new File([bytesOf(7, 7)], 'plain.bin') })
  const retried = await keyed(`sweep-${newId('k')}`, bytesOf(8, 8))
  const legacy = await storeLegacy(newId('file'), bytesOf(9, 9))
  const body = { id: newId('file'), source_id: retried.id, scope_id: newId('sesn'), resource_id: newId('sesrsc') }
  const copy = await client.call(FileKind.ops.copy, { body })
  t.same(await objectsOf(copy.id), [copy.id], 'a copy is in the object named like its id')
  const lostRace = uploadObjectName(retried.id)
  const neverRecorded = uploadObjectName(newId('file'))
  const staleById = retried.id
  for (const o of [lostRace, neverRecorded, staleById]) await os.put({ name: o }, new Blob([bytesOf(3, 3)]).stream())

  const projection = new Projection<StoredFile>(kv, FILE_PREFIX)
  await projection.start()
  t.teardown(() => projection.stop())
  await projection.fresh()
  const live = projection.list()
  const expected = new Map<string, Uint8Array<ArrayBuffer>>()
  for (const f of live) expected.set(f.id, await download(f.id))
  const ids = new Set(live.map((f) => f.id))
  for (const f of [plain, retried, legacy, copy]) t.ok(ids.has(f.id), `${f.id} is recorded`)

  const named = namedAtSource(projection, fileNames)
  t.equal(await sweepOrphans(os, jsm, named, -1), 3, 'the three orphans, nothing else')
  const left = new Set((await os.list()).map((o) => o.name))
  for (const o of [lostRace, neverRecorded, staleById]) t.notOk(left.has(o), `${o} is swept`)
  for (const f of live) t.same(await download(f.id), expected.get(f.id), `${f.id} still downloads its bytes`)
  t.equal(left.size, live.length, 'one object per file')
})
