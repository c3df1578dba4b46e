import { toFile } from '@anthropic-ai/sdk'
import t from 'tap'
import { stack } from '../helpers/stack.js'

/**
 * Strict mode on files: the official client sends no beta header there (WIRE §10), so none is asked for; the key
 * and version are, and an upload's multipart body is not refused as "not JSON".
 */
const s = await stack({ strict: true })

t.test('the official client uploads, lists, downloads and deletes in strict mode', async (t) => {
  const files = s.client.beta.files
  const f = await files.upload({ file: await toFile(new Uint8Array([1, 2, 3]), 'a.bin', { type: 'application/octet-stream' }) })
  t.equal(f.size_bytes, 3)
  t.ok((await files.list()).data.some((x) => x.id === f.id))
  t.same(new Uint8Array(await (await files.download(f.id)).arrayBuffer()), new Uint8Array([1, 2, 3]))
  t.equal((await files.delete(f.id)).id, f.id)
})

t.test('without a key or a version header: refused as on every route', async (t) => {
  const noKey = await fetch(`${s.url}/v1/files`, { headers: { 'anthropic-version': '2023-06-01' } })
  t.equal(noKey.status, 401)
  const noVersion = await fetch(`${s.url}/v1/files`, { headers: { 'x-api-key': 'k' } })
  t.equal(noVersion.status, 400)
  const fd = new FormData()
  fd.append('file', new Blob([new Uint8Array([1])]), 'x.bin')
  const upload = await fetch(`${s.url}/v1/files`, { method: 'POST', body: fd })
  t.equal(upload.status, 401, 'an upload without a key is answered while its body is dropped')
})
