import { jetstreamManager } from '@nats-io/jetstream'
import { Objm } from '@nats-io/obj'
import { connect } from '@nats-io/transport-node'
import t from 'tap'
import { ObjectStores, objectChunkPrefix, objectStream } from '../../protocol/subjects.js'
import '../helpers/keepalive.js'
import { startNats } from '../helpers/nats.js'
import { clientFor, startTroupe } from '../helpers/troupe.js'
import { until } from '../helpers/wait.js'
import { chunked } from './chunked.js'

/**
 * A server SIGKILLed in the middle of an upload: the file is absent afterwards (no record, no object; its chunks are
 * left for the orphan sweep), and a server started in its place serves files as before.
 */
const nats = await startNats()
const nc = await connect({ servers: nats.url })
t.teardown(async () => {
  await nc.close()
  nats.stopNow()
})
const jsm = await jetstreamManager(nc)
const chunkCount = async () => {
  const si = await jsm.streams.info(objectStream(ObjectStores.files), { subjects_filter: `${objectChunkPrefix(ObjectStores.files)}>` })
  return Object.values(si.state.subjects ?? {}).reduce((n, c) => n + c, 0)
}

t.test('an upload in flight at the kill is absent', async (t) => {
  const first = await startTroupe({ natsUrl: nats.url })
  t.teardown(() => first.killNow())
  const before = await chunkCount()
  // Far more than gets stored before the kill: 3 chunks in, the process dies.
  const upload = chunked(first.url, 200 * 1024 * 1024)
  await until('a few chunks stored', async () => (await chunkCount()) >= before + 3)
  await first.kill()
  t.equal(await upload, 'reset', 'the client sees the connection go')

  const second = await startTroupe({ natsUrl: nats.url })
  t.teardown(() => second.killNow())
  const files = clientFor(second.url).beta.files
  t.same((await files.list()).data, [], 'nothing listed')
  const objects = await new Objm(nc).open(ObjectStores.files).then((os) => os.list())
  t.same(objects, [], 'no object became visible')
  const f = await files.upload({ file: new File([new Uint8Array([1, 2])], 'after.bin', { type: 'application/octet-stream' }) })
  t.same(new Uint8Array(await (await files.download(f.id)).arrayBuffer()), new Uint8Array([1, 2]), 'the next server serves files')
})
