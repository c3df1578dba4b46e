import { createHash } from 'node:crypto'
import { Objm } from '@nats-io/obj'
import type { Msg } from '@nats-io/transport-node'
import pino from 'pino'
import t from 'tap'
import { openObjectStore } from '../../actors/kit/object-stores.js'
import { ObjectWrites } from '../../actors/kit/object-writes.js'
import { clearSubject } from '../../actors/kit/sequence-deletes.js'
import { objectChunkPrefix, objectMetaSubject } from '../../protocol/subjects.js'
import { natsWithClient } from '../helpers/nats.js'

/**
 * Our object store writes on a real nats-server: nats.js's `info`, `list` and `get` read what they write as their own,
 * a put over a name and a delete leave nothing of the object before them, and no subject is ever purged (no purge
 * request, no rollup header): what goes is deleted by sequence.
 */
const { nc, js, jsm } = await natsWithClient(t)
const STORE = 'objwrites_test'
const STREAM = `OBJ_${STORE}`
const os = await openObjectStore(new Objm(js), { jsm, replicas: 1, log: pino({ level: 'silent' }) }, STORE)
const writes = new ObjectWrites(js, STORE)
const CHUNK = 1000

// Every purge request and every message written to the store, as the server sees them.
const purges: string[] = []
const deletes: string[] = []
const rollups: string[] = []
const watch = (subject: string, onMsg: (m: Msg) => void) =>
  nc.subscribe(subject, {
    callback: (err, m) => {
      if (!err) onMsg(m)
    },
  })
watch('$JS.API.STREAM.PURGE.>', (m) => purges.push(m.subject))
watch('$JS.API.STREAM.MSG.DELETE.>', (m) => deletes.push(m.subject))
watch(`$O.${STORE}.>`, (m) => m.headers?.get('Nats-Rollup') && rollups.push(m.subject))
t.afterEach(async () => {
  await nc.flush()
  t.same(purges, [], 'nothing was purged')
  t.same(rollups, [], 'no rollup was written')
})

const bytesOf = (n: number, fill: number) => new Uint8Array(n).fill(fill)
const onSubject = async (filter: string) => {
  const si = await jsm.streams.info(STREAM, { subjects_filter: filter })
  return Object.values(si.state.subjects ?? {}).reduce((a, b) => a + b, 0)
}
const chunksOf = (nuid: string) => onSubject(objectChunkPrefix(STORE) + nuid)
const entriesOf = (name: string) => onSubject(objectMetaSubject(STORE, name))

t.test('a put is an object nats.js reads as its own', async (t) => {
  const data = bytesOf(3500, 7)
  const put = await writes.put('one', [data.subarray(0, 1200), data.subarray(1200)], CHUNK)
  t.equal(put.size, 3500)
  t.equal(put.chunks, 4, 'in chunks of the size asked')
  t.equal(put.digest, `SHA-256=${createHash('sha256').update(data).digest('base64url')}=`, 'the digest as nats.js writes it, padded')
  const info = await os.info('one')
  t.equal(info?.revision, put.revision)
  t.equal(info?.nuid, put.nuid)
  t.same(Buffer.from((await os.getBlob('one'))!), Buffer.from(data), "nats.js's get checks the digest and gives the bytes")
  t.ok(
    (await os.list()).some((o) => o.name === 'one'),
    'listed',
  )
  t.equal(await chunksOf(put.nuid), 4)
  t.equal(await entriesOf('one'), 1, 'one meta entry')

  const empty = await writes.put('empty', [])
  t.equal(empty.chunks, 0)
  t.same(Buffer.from((await os.getBlob('empty'))!), Buffer.alloc(0), 'an empty object reads as empty')

  const streamed = await writes.put('streamed', new Blob([bytesOf(2500, 3)]).stream(), CHUNK)
  t.equal(streamed.chunks, 3, 'a ReadableStream body is read too')
  t.same(Buffer.from((await os.getBlob('streamed'))!), Buffer.from(bytesOf(2500, 3)))
})

t.test('a put over a name: the object before goes, chunks and meta entry, by sequence', async (t) => {
  const first = await writes.put('over', [bytesOf(2500, 1)], CHUNK)
  deletes.length = 0
  const second = await writes.put('over', [bytesOf(1500, 2)], CHUNK)
  t.not(second.nuid, first.nuid)
  t.equal(await chunksOf(first.nuid), 0, 'the old chunks are gone')
  t.equal(await chunksOf(second.nuid), 2)
  t.equal(await entriesOf('over'), 1, 'only the new meta entry is left')
  t.equal(deletes.length, 3 + 1, "the old object's three chunks and its meta entry, deleted one sequence at a time")
  t.same(Buffer.from((await os.getBlob('over'))!), Buffer.from(bytesOf(1500, 2)), 'reads give the new bytes')
  t.equal((await os.info('over'))?.revision, second.revision)
})

t.test('a delete is a deleted meta entry, as nats.js writes it; its chunks go by sequence', async (t) => {
  const put = await writes.put('gone', [bytesOf(1500, 4)], CHUNK)
  t.equal(await writes.delete('gone'), true)
  const info = await os.info('gone')
  t.equal(info?.deleted, true, "nats.js's info says deleted")
  t.equal(info?.size, 0)
  t.equal(await os.get('gone'), null, "nats.js's get finds nothing")
  t.notOk(
    (await os.list()).some((o) => o.name === 'gone'),
    'not listed',
  )
  t.equal(await chunksOf(put.nuid), 0, 'its chunks are gone')
  t.equal(await entriesOf('gone'), 1, 'one entry: the deleted one')
  t.equal(await writes.delete('never-was'), false, 'nothing to delete')

  const again = await writes.put('gone', [bytesOf(10, 5)], CHUNK)
  t.same(Buffer.from((await os.getBlob('gone'))!), Buffer.from(bytesOf(10, 5)), 'a name deleted can be put again')
  t.equal(await entriesOf('gone'), 1, 'and the deleted entry went')
  t.equal((await os.info('gone'))?.revision, again.revision)
})

t.test('what nats.js wrote is replaced and deleted the same way', async (t) => {
  const old = await os.put({ name: 'legacy', options: { max_chunk_size: CHUNK } }, new Blob([bytesOf(2000, 6)]).stream())
  await nc.flush()
  rollups.length = 0
  await writes.put('legacy', [bytesOf(100, 8)], CHUNK)
  t.equal(await chunksOf(old.nuid), 0, "nats.js's chunks are gone")
  t.equal(await entriesOf('legacy'), 1, 'its rollup entry too')
  const other = await os.put({ name: 'legacy-deleted' }, new Blob([bytesOf(100, 9)]).stream())
  await nc.flush()
  t.equal(rollups.length, 1, "nats.js's own put wrote a rollup")
  rollups.length = 0
  t.equal(await writes.delete('legacy-deleted'), true)
  t.equal(await chunksOf(other.nuid), 0)
})

t.test('what a write cut short leaves is never read, and the next write of the name takes it away', async (t) => {
  const a = await writes.put('cut', [bytesOf(1500, 1)], CHUNK)
  // A put that died after its meta entry, before it deleted what that supersedes: two entries, two objects' chunks.
  const b = await writes.put('cut-b', [bytesOf(1200, 2)], CHUNK)
  await writes.writeMeta({ ...b, name: 'cut' })
  t.equal(await entriesOf('cut'), 2)
  t.same(Buffer.from((await os.getBlob('cut'))!), Buffer.from(bytesOf(1200, 2)), 'readers take the last entry')
  t.same(
    (await os.list()).filter((o) => o.name === 'cut').map((o) => o.nuid),
    [b.nuid],
    'the list has the last one only',
  )
  t.equal((await writes.meta('cut'))?.nuid, b.nuid)
  // A chunk of a put that died before its meta entry.
  await js.publish(`${objectChunkPrefix(STORE)}dead`, bytesOf(10, 0))
  const c = await writes.put('cut', [bytesOf(100, 3)], CHUNK)
  t.equal(await entriesOf('cut'), 1, 'the next put leaves one entry')
  t.equal(await chunksOf(a.nuid), 0, "the older entry's chunks went")
  t.equal(await chunksOf(b.nuid), 0, "and the newer's")
  t.equal(await chunksOf(c.nuid), 1)
  t.equal(await chunksOf('dead'), 1, 'chunks no entry names are the sweep’s')
})

t.test('a put whose body fails leaves nothing: its chunks go, no meta entry is written', async (t) => {
  async function* failing() {
    yield bytesOf(2500, 1)
    throw new Error('the client went away')
  }
  const before = await onSubject(`${objectChunkPrefix(STORE)}>`)
  await t.rejects(writes.put('failed', failing(), CHUNK), /went away/)
  t.equal(await onSubject(`${objectChunkPrefix(STORE)}>`), before, 'the two chunks it wrote are gone')
  t.equal(await writes.meta('failed'), undefined)
})

t.test('clearSubject deletes every message of a wildcard by sequence, and again finds nothing', async (t) => {
  for (let i = 0; i < 300; i++) await js.publish(`${objectChunkPrefix(STORE)}many.${i % 7}`, bytesOf(5, i % 256))
  const kept = await js.publish(`${objectChunkPrefix(STORE)}manyother`, bytesOf(5, 1))
  t.equal(await clearSubject(jsm, STREAM, `${objectChunkPrefix(STORE)}many.>`), 300)
  t.equal(await onSubject(`${objectChunkPrefix(STORE)}many.>`), 0)
  t.ok(await jsm.streams.getMessage(STREAM, { seq: kept.seq }), 'a subject beside it keeps its message')
  t.equal(await clearSubject(jsm, STREAM, `${objectChunkPrefix(STORE)}many.>`), 0)
})
