import { toFile } from '@anthropic-ai/sdk'
import { jetstreamManager } from '@nats-io/jetstream'
import { connect } from '@nats-io/transport-node'
import t from 'tap'
import { stack } from '../helpers/stack.js'
import { chunked } from './chunked.js'

/**
 * The upload size limit (TROUPE_FILE_MAX_MIB, here 1) and uploads that never complete: past the limit a 413 with
 * nothing stored, whether the length is declared or counted as it streams.
 */
const MiB = 1024 * 1024
const s = await stack({ env: { TROUPE_FILE_MAX_MIB: '1' } })
const files = s.client.beta.files
const nc = await connect({ servers: s.nats.url })
t.teardown(() => nc.close())
const jsm = await jetstreamManager(nc)
/** Messages in the object store's stream: every stored object's chunks and its meta entry. */
const storedMessages = async () => (await jsm.streams.info('OBJ_troupe_files')).state.messages

const upload = async (size: number) => files.upload({ file: await toFile(new Uint8Array(size).fill(7), 'x.bin', { type: 'application/octet-stream' }) })

t.test('up to the limit is stored; past it, 413 and nothing stored', async (t) => {
  const ok = await upload(MiB)
  t.equal(ok.size_bytes, MiB)
  const base = await storedMessages()
  const listed = (await files.list()).data.length
  for (const size of [MiB + 1, 3 * MiB]) {
    const err = await upload(size).catch((e) => e)
    t.equal(err.status, 413, `${size} bytes declared`)
    t.match(err.error.error.message, /file: larger than the limit of 1048576 bytes/)
  }
  const streamed = await chunked(s.url, 2 * MiB)
  t.not(streamed, 'reset', 'the client reads the 413 rather than a reset')
  if (streamed !== 'reset') t.equal(streamed.status, 413, 'counted while streaming')
  t.equal((await files.list()).data.length, listed, 'nothing listed')
  t.equal(await storedMessages(), base, 'no chunk left in the store')
  // The connection and server are fine afterwards.
  t.equal((await upload(10)).size_bytes, 10)
})

t.test('a chunked upload within the limit', async (t) => {
  const r = await chunked(s.url, 512 * 1024)
  t.not(r, 'reset')
  if (r === 'reset') return
  t.equal(r.status, 200)
  t.equal(JSON.parse(r.body).size_bytes, 512 * 1024)
})
