import { randomBytes } from 'node:crypto'
import { toFile } from '@anthropic-ai/sdk'
import t from 'tap'
import { jetstreamManager } from '@nats-io/jetstream'
import { connect } from '@nats-io/transport-node'
import { actorWire } from '../../actors/kit/wire.js'
import { FileKind } from '../../protocol/ops/file.js'
import { newId } from '../../protocol/ids.js'
import { opSubject } from '../../protocol/subjects.js'
import { stack } from '../helpers/stack.js'
import { until } from '../helpers/wait.js'
import { chunked } from './chunked.js'
import { raw } from '../helpers/troupe.js'

/** The Files API through the official client (WIRE §10): exact bytes back, listing, delete, and bad uploads. */
const s = await stack()
const files = s.client.beta.files

const upload = async (bytes: Uint8Array, name: string, type?: string) => files.upload({ file: await toFile(bytes, name, type ? { type } : {}) })
const download = async (id: string) => new Uint8Array(await (await files.download(id)).arrayBuffer())

t.test('binary bytes come back exactly, with their type and name', async (t) => {
  const bytes = new Uint8Array(256 * 3).map((_, i) => i % 256)
  const f = await upload(bytes, 'dir/sub/all-bytes.bin', 'application/x-thing')
  t.match(f.id, /^file_/)
  t.equal(f.type, 'file')
  t.equal(f.filename, 'all-bytes.bin', 'only the last path component is kept')
  t.equal(f.mime_type, 'application/x-thing')
  t.equal(f.size_bytes, bytes.length)
  t.equal(f.downloadable, true)
  t.same(await download(f.id), bytes)
  const res = await fetch(`${s.url}/v1/files/${f.id}/content`)
  t.equal(res.headers.get('content-type'), 'application/x-thing')
  t.equal(res.headers.get('content-length'), String(bytes.length))
  t.same(await files.retrieveMetadata(f.id), f)
})

t.test('an empty file', async (t) => {
  const f = await upload(new Uint8Array(0), 'empty.txt', 'text/plain')
  t.equal(f.size_bytes, 0)
  t.same(await download(f.id), new Uint8Array(0))
})

t.test('50 MB round trip', async (t) => {
  const bytes = randomBytes(50 * 1000 * 1000)
  const f = await upload(bytes, 'big.bin', 'application/octet-stream')
  t.equal(f.size_bytes, bytes.length)
  const back = await download(f.id)
  t.equal(back.length, bytes.length)
  t.ok(Buffer.from(back).equals(bytes), 'same bytes')
})

t.test('HEAD on content: the length, no body', async (t) => {
  const f = await upload(new Uint8Array([1, 2, 3]), 'three.bin', 'application/octet-stream')
  const res = await fetch(`${s.url}/v1/files/${f.id}/content`, { method: 'HEAD' })
  t.equal(res.status, 200)
  t.equal(res.headers.get('content-length'), '3')
})

t.test('delete, then 404 everywhere', async (t) => {
  const f = await upload(new Uint8Array([9]), 'gone.bin', 'application/octet-stream')
  t.same(await files.delete(f.id), { id: f.id, type: 'file_deleted' })
  for (const path of [`/v1/files/${f.id}`, `/v1/files/${f.id}/content`]) {
    const r = await raw(s.url, 'GET', path)
    t.equal(r.status, 404, path)
    t.equal(r.json.error.type, 'not_found_error')
  }
  t.equal((await raw(s.url, 'DELETE', `/v1/files/${f.id}`)).status, 404)
  const ids = (await files.list({ limit: 1000 })).data.map((x) => x.id)
  t.notOk(ids.includes(f.id))
})

t.test('list: newest first, paging with cursors, ids[]', async (t) => {
  const made = []
  for (let i = 0; i < 5; i++) made.push(await upload(new Uint8Array([i]), `p${i}.bin`, 'application/octet-stream'))
  const first = await files.list({ limit: 2 })
  t.equal(first.data.length, 2)
  t.equal(first.data[0]!.id, made[4]!.id)
  const seen: string[] = []
  for await (const f of files.list({ limit: 2 })) seen.push(f.id)
  for (const m of made) t.ok(seen.includes(m.id), `${m.id} listed`)
  t.equal(new Set(seen).size, seen.length, 'no repeats across pages')
  const byIds = await raw(s.url, 'GET', `/v1/files?ids[]=${made[1]!.id}&ids[]=${made[3]!.id}`)
  t.equal(byIds.status, 200)
  t.same(byIds.json.data.map((f: { id: string }) => f.id).sort(), [made[1]!.id, made[3]!.id].sort())
  t.equal(byIds.json.next_page, null)
})

t.test('list filters are checked', async (t) => {
  for (const [q, field] of [
    ['scope_id=nope', 'scope_id'],
    ['ids[]=file-x', 'ids'],
    ['limit=0', 'limit'],
    [`ids[]=file_a&limit=2`, 'ids'],
  ] as const) {
    const r = await raw(s.url, 'GET', `/v1/files?${q}`)
    t.equal(r.status, 400, q)
    t.match(r.json.error.message, field, q)
  }
  const scoped = await raw(s.url, 'GET', '/v1/files?scope_id=sesn_01NOSUCHSESSION')
  t.equal(scoped.status, 200)
  t.same(scoped.json.data, [])
})

t.test('bad uploads: 400 naming the rule, nothing stored', async (t) => {
  const before = (await files.list({ limit: 1000 })).data.length
  const form = (parts: Array<[string, Blob | string, string?]>) => {
    const fd = new FormData()
    for (const [name, value, filename] of parts) typeof value === 'string' ? fd.append(name, value) : fd.append(name, value, filename)
    return fd
  }
  const cases: Array<[string, RequestInit, RegExp]> = [
    ['no file part', { body: form([['other', new Blob([new Uint8Array([1])]), 'x.bin']]) }, /file: the upload has no part named "file"/],
    ['only a field', { body: form([['file', 'not a file']]) }, /file: the upload has no part named "file"/],
    [
      'two file parts',
      {
        body: form([
          ['file', new Blob([new Uint8Array([1])]), 'a.bin'],
          ['file', new Blob([new Uint8Array([2])]), 'b.bin'],
        ]),
      },
      /more than one part named "file"/,
    ],
    ['json', { body: '{"file":"x"}', headers: { 'content-type': 'application/json' } }, /multipart\/form-data/],
    ['no body', {}, /no part named "file"/],
    [
      'truncated multipart',
      { body: '--b\r\ncontent-disposition: form-data; name="file"; filename="x"\r\n\r\nabc', headers: { 'content-type': 'multipart/form-data; boundary=b' } },
      /not well-formed multipart/,
    ],
  ]
  for (const [what, init, message] of cases) {
    const res = await fetch(`${s.url}/v1/files`, { method: 'POST', ...init })
    const body = (await res.json()) as { error: { message: string } }
    t.equal(res.status, 400, what)
    t.match(body.error.message, message, what)
  }
  t.equal((await files.list({ limit: 1000 })).data.length, before, 'nothing recorded')
})

t.test('path ids are checked', async (t) => {
  t.equal((await raw(s.url, 'GET', '/v1/files/env_123')).status, 404)
  t.equal((await raw(s.url, 'GET', '/v1/files/file_01NOSUCH/content')).status, 404)
})

t.test('a client gone midway leaves nothing: its chunks are purged, nothing is listed', async (t) => {
  const nc = await connect({ servers: s.nats.url })
  t.teardown(() => nc.close())
  const jsm = await jetstreamManager(nc)
  const stored = async () => (await jsm.streams.info('OBJ_troupe_files')).state.messages
  const base = await stored()
  const listed = (await files.list({ limit: 1000 })).data.length
  // Past a few chunks (1 MiB each), so some were stored before the client went.
  t.equal(await chunked(s.url, 5 * 1024 * 1024, { cut: true }), 'reset')
  await until('the partial chunks purged', async () => (await stored()) === base)
  t.equal((await files.list({ limit: 1000 })).data.length, listed)
})

t.test('scope_id lists the files scoped to one session (as session outputs will be recorded)', async (t) => {
  const nc = await connect({ servers: s.nats.url })
  t.teardown(() => nc.close())
  const wire = actorWire(nc)
  const session = newId('sesn')
  // The bytes first, as every file is stored, then the record with its scope, through the kind's internal create.
  const plain = await upload(new Uint8Array([5]), 'unscoped.bin', 'application/octet-stream')
  const id = newId('file')
  const record = { id, filename: 'out.txt', mime_type: 'text/plain', size_bytes: 0, scope_id: session }
  const made = (await wire.ask(opSubject(FileKind.ops.create, undefined), { op: 'create', rid: newId('req'), params: {}, query: {}, body: record }, 5000)) as {
    scope: unknown
  }
  t.same(made.scope, { type: 'session', id: session })
  const scoped = await files.list({ scope_id: session } as never)
  t.same(
    scoped.data.map((f) => f.id),
    [id],
  )
  t.ok(
    (await files.list({ limit: 1000 })).data.some((f) => f.id === plain.id),
    'unscoped listing has every file',
  )
})

t.test('a file deleted while a slow client downloads it: the download is cut short, never completed or hung', async (t) => {
  const bytes = randomBytes(30 * 1000 * 1000)
  const f = await upload(bytes, 'deleted-midway.bin', 'application/octet-stream')
  const res = await fetch(`${s.url}/v1/files/${f.id}/content`)
  t.equal(res.headers.get('content-length'), String(bytes.length))
  const reader = res.body!.getReader()
  let got = (await reader.read()).value?.length ?? 0
  // The client stalls after its first piece; the server can be at most a socket's buffers ahead of it.
  await files.delete(f.id)
  const outcome = await (async () => {
    for (;;) {
      const r = await reader.read()
      if (r.done) return 'ended'
      got += r.value.length
    }
  })().catch(() => 'cut')
  t.equal(outcome, 'cut', 'the connection closed before the promised length')
  t.ok(got < bytes.length, `${got} of ${bytes.length} bytes came`)
})
