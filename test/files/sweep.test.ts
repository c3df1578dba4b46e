import { jetstreamManager } from '@nats-io/jetstream'
import { Objm } from '@nats-io/obj'
import { connect } from '@nats-io/transport-node'
import pino from 'pino'
import t from 'tap'
import { openObjectStore } from '../../actors/kit/object-stores.js'
import { ObjectWrites } from '../../actors/kit/object-writes.js'
import { sweepOrphans } from '../../actors/file/sweep.js'
import { ObjectStores, objectChunkPrefix, objectMetaSubject } from '../../protocol/subjects.js'
import { startNats } from '../helpers/nats.js'

/**
 * The orphan sweep on a real object store: bytes no record names go once old enough (an object whose record was never
 * written, chunks of an upload whose process was killed before its meta entry), and nothing else does.
 */
const nats = await startNats()
const nc = await connect({ servers: nats.url })
t.teardown(async () => {
  await nc.close()
  await nats.stop()
})
const jsm = await jetstreamManager(nc)
const os = await openObjectStore(new Objm(nc), { jsm, replicas: 1, log: pino({ level: 'silent' }) }, ObjectStores.files)
const bytes = (n: number) => new Blob([new Uint8Array(n).fill(1)]).stream()

t.test('orphaned objects and chunks go; recorded and young ones stay', async (t) => {
  await os.put({ name: 'file_recorded' }, bytes(10))
  await os.put({ name: 'file_orphan' }, bytes(10))
  // A killed upload: chunks on a subject no meta entry names.
  await nc.request('$O.troupe_files.C.deadupload', new Uint8Array(5))
  const recorded = (id: string) => id === 'file_recorded'

  t.equal(await sweepOrphans(os, jsm, recorded, 60_000), 0, 'nothing is old enough yet')
  t.equal(await sweepOrphans(os, jsm, recorded, -1), 2, 'the orphaned object and the dead chunks')
  t.ok(await os.info('file_recorded'), 'the recorded file stays')
  const orphan = await os.info('file_orphan')
  t.ok(!orphan || orphan.deleted, 'the orphan is gone')
  const si = await jsm.streams.info('OBJ_troupe_files', { subjects_filter: '$O.troupe_files.C.>' })
  t.notOk(Object.keys(si.state.subjects ?? {}).includes('$O.troupe_files.C.deadupload'), 'the dead chunks are deleted')
  t.equal(await sweepOrphans(os, jsm, recorded, -1), 0, 'a second pass finds nothing')
})

t.test('a projection behind never makes recorded bytes look orphaned: the record at the bucket leader keeps them', async (t) => {
  const { Kvm } = await import('@nats-io/kv')
  const { encode } = await import('../../protocol/codec.js')
  const { Projection } = await import('../../actors/kit/projection.js')
  const { fileNames, namedAtSource } = await import('../../actors/file/sweep.js')
  const kv = await new Kvm(nc).create('sweep_test_records')
  await os.put({ name: 'file_behind' }, bytes(10))
  await os.put({ name: 'file_gone' }, bytes(10))
  const projection = new Projection<any>(kv, 'file.')
  await projection.start()
  t.teardown(() => projection.stop())
  // Recorded after the projection stopped looking: its copy does not have it (as a watch that lost its place).
  projection.stop()
  await kv.put('file.file_behind', encode({ id: 'file_behind', created_at: new Date().toISOString() }))
  t.equal(projection.get('file_behind'), undefined, 'the projection is behind')
  await sweepOrphans(os, jsm, namedAtSource(projection, fileNames), -1)
  t.ok(await os.info('file_behind'), 'the recorded file stays')
  const gone = await os.info('file_gone')
  t.ok(!gone || gone.deleted, 'the unrecorded one is swept')
})

t.test("a meta entry a write cut short left before a name's last goes, with its chunks", async (t) => {
  const writes = new ObjectWrites(jsm.jetstream(), ObjectStores.files)
  const older = await writes.put('file_twice', [new Uint8Array(10).fill(1)])
  const newer = await writes.put('file_twice_b', [new Uint8Array(10).fill(2)])
  // A put over the name that died after its meta entry, before it deleted the one before.
  await writes.writeMeta({ ...newer, name: 'file_twice' })
  const count = async (filter: string) => {
    const si = await jsm.streams.info('OBJ_troupe_files', { subjects_filter: filter })
    return Object.values(si.state.subjects ?? {}).reduce((a, b) => a + b, 0)
  }
  t.equal(await count(objectMetaSubject(ObjectStores.files, 'file_twice')), 2)
  await sweepOrphans(os, jsm, () => true, -1)
  t.equal(await count(objectMetaSubject(ObjectStores.files, 'file_twice')), 1, 'one entry left')
  t.equal(await count(objectChunkPrefix(ObjectStores.files) + older.nuid), 0, "the older entry's chunks went")
  t.equal((await os.info('file_twice'))?.nuid, newer.nuid, 'the last entry stays')
  t.equal(await count(objectChunkPrefix(ObjectStores.files) + newer.nuid), 1, 'with its chunks')
})
