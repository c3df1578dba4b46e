import { toFile } from '@anthropic-ai/sdk'
import { Kvm } from '@nats-io/kv'
import { connect } from '@nats-io/transport-node'
import t from 'tap'
import { actorClient } from '../../actors/kit/client.js'
import { actorWire } from '../../actors/kit/wire.js'
import { COPY_MAX_AGE_MS, COPY_MIN_AGE_MS, sweepCopies } from '../../actors/file/copies.js'
import type { StoredFile } from '../../actors/file/state.js'
import { copyIdOf } from '../../actors/file/index.js'
import { decode } from '../../protocol/codec.js'
import { newId } from '../../protocol/ids.js'
import { FileKind } from '../../protocol/ops/file.js'
import { Buckets } from '../../protocol/subjects.js'
import { failure } from '../agents/_util.js'
import { stack } from '../helpers/stack.js'

/**
 * The file kind's `copy` (internal: a session resource's copy): idempotent by the copy's id, independent of its source
 * once made; and the sweep of copies no resource names (a host killed between a copy and the record that lists it).
 */
const s = await stack()
const files = s.client.beta.files
const nc = await connect({ servers: s.nats.url })
t.teardown(() => nc.close())
// Over NATS, as another host would call: every op goes to its subject.
const client = actorClient({ wire: actorWire(nc), local: () => undefined })
const kv = await new Kvm(nc).open(Buckets.files)

const upload = async (text: string) => files.upload({ file: await toFile(Buffer.from(text), 'src.txt', { type: 'text/plain' }) })
const copy = (body: { id: string; source_id: string; scope_id: string; resource_id: string }) => client.call(FileKind.ops.copy, { body })
const stored = async (id: string) => {
  const e = await kv.get(`file.${id}`)
  return e && e.length > 0 ? decode<StoredFile>(e.value) : undefined
}

t.test('a copy is made once, whatever number of times it is asked for, and outlives its source', async (t) => {
  const src = await upload('source bytes')
  const body = { id: newId('file'), source_id: src.id, scope_id: newId('sesn'), resource_id: newId('sesrsc') }
  const [a, b] = await Promise.all([copy(body), copy(body)])
  t.same(a, b, 'two at once: one copy')
  t.match(a, { id: body.id, filename: 'src.txt', mime_type: 'text/plain', size_bytes: 12, scope: { type: 'session', id: body.scope_id } })
  t.notOk('resource_id' in a, 'the resource it was made for is kept, never shown')
  t.equal((await stored(body.id))?.resource_id, body.resource_id)
  t.same(await files.retrieveMetadata(body.id), a)
  await files.delete(src.id)
  t.same(await copy(body), a, 'asked again after its source went: the copy made before')
  t.equal(Buffer.from(await (await files.download(body.id)).arrayBuffer()).toString(), 'source bytes')
  const gone = await failure(copy({ ...body, id: newId('file') }))
  t.match(gone, { status: 404, reason: 'file_not_found', message: `File ${src.id} not found` })
})

t.test('the sweep deletes copies whose session or resource is gone, once old enough, and only those', async (t) => {
  const { id: agent } = await s.client.beta.agents.create({ name: 'a', model: 'claude-sonnet-4-5' })
  const { id: env } = await s.client.beta.environments.create({ name: 'e' })
  const src = await upload('x')
  const session = await s.client.beta.sessions.create({ agent, environment_id: env, resources: [{ type: 'file', file_id: src.id }] } as any)
  const kept = copyIdOf(session.id, (session.resources[0] as any).id)
  // A create killed after its copies (no such session), and an add killed after its copy (no such resource).
  const noSession = await copy({ id: newId('file'), source_id: src.id, scope_id: newId('sesn'), resource_id: newId('sesrsc') })
  const noResource = await copy({ id: newId('file'), source_id: src.id, scope_id: session.id, resource_id: newId('sesrsc') })
  const records = await Promise.all([kept, noSession.id, noResource.id, src.id].map(async (id) => (await stored(id))!))
  const newest = Math.max(...records.map((r) => Date.parse(r.created_at)))

  t.equal(await sweepCopies(records, client, newest + COPY_MIN_AGE_MS - 1000), 0, 'too young: left alone')
  t.equal(await sweepCopies(records, client, newest + COPY_MAX_AGE_MS + 1000), 0, 'too old to be looked at any more')
  t.equal(await sweepCopies(records, client, newest + COPY_MIN_AGE_MS + 1000), 2)
  for (const id of [noSession.id, noResource.id]) t.equal((await failure(files.retrieveMetadata(id))).status, 404, `${id} swept`)
  t.equal((await files.retrieveMetadata(kept)).id, kept, "the resource's copy stays")
  t.equal((await files.retrieveMetadata(src.id)).id, src.id, 'a file that is no copy is never looked at')
})
