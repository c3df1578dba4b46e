import t from 'tap'
import { toFile } from '@anthropic-ai/sdk'
import { stack } from '../helpers/stack.js'
import { raw } from '../helpers/troupe.js'

const s = await stack({ strict: true })
const good = { 'x-api-key': 'k', 'anthropic-version': '2023-06-01', 'anthropic-beta': 'managed-agents-2026-04-01' }

t.test('the official client works unmodified in strict mode', async (t) => {
  const e = await s.client.beta.environments.create({ name: 'strict' })
  t.match(e.id, /^env_/)
  const a = await s.client.beta.environments.archive(e.id)
  t.ok(a.archived_at, 'body-less POST needs no content-type')
  const list = await s.client.beta.environments.list({ include_archived: true })
  t.ok(list.data.some((x) => x.id === e.id))
})

t.test('missing API key is 401', async (t) => {
  const { 'x-api-key': _k, ...rest } = good
  const r = await raw(s.url, 'GET', '/v1/environments', undefined, rest)
  t.equal(r.status, 401)
  t.equal(r.json.error.type, 'authentication_error')
  const bearer = await raw(s.url, 'GET', '/v1/environments', undefined, { ...rest, authorization: 'Bearer z' })
  t.equal(bearer.status, 200, 'authorization replaces x-api-key')
})

t.test('version header: missing or wrong is 400; vendor- and anthropic- both work', async (t) => {
  const { 'anthropic-version': _v, ...rest } = good
  t.equal((await raw(s.url, 'GET', '/v1/environments', undefined, rest)).status, 400)
  t.equal((await raw(s.url, 'GET', '/v1/environments', undefined, { ...rest, 'vendor-version': '1999-01-01' })).status, 400)
  t.equal((await raw(s.url, 'GET', '/v1/environments', undefined, { ...rest, 'vendor-version': '2023-06-01' })).status, 200)
  t.equal((await raw(s.url, 'GET', '/v1/environments', undefined, { ...rest, 'anthropic-version': '2026-10-21' })).status, 200)
})

t.test('beta header must claim managed-agents', async (t) => {
  const { 'anthropic-beta': _b, ...rest } = good
  const none = await raw(s.url, 'GET', '/v1/environments', undefined, rest)
  t.equal(none.status, 400)
  t.match(none.json.error.message, /managed-agents-2026-04-01/)
  t.equal((await raw(s.url, 'GET', '/v1/environments', undefined, { ...rest, 'vendor-beta': 'other,managed-agents-2026-04-01' })).status, 200)
  t.equal((await raw(s.url, 'GET', '/v1/environments', undefined, { ...rest, 'anthropic-beta': 'skills-2025-10-02' })).status, 400)
})

t.test('JSON bodies need content-type application/json', async (t) => {
  const r = await raw(s.url, 'POST', '/v1/environments', JSON.stringify({ name: 'x' }), { ...good, 'content-type': 'text/plain' })
  t.equal(r.status, 400)
  t.match(r.json.error.message, /content-type/)
  const ok = await raw(s.url, 'POST', '/v1/environments', { name: 'x' }, good)
  t.equal(ok.status, 200)
})

t.test('health routes need no headers', async (t) => {
  t.equal((await raw(s.url, 'GET', '/healthz')).status, 200)
  t.equal((await raw(s.url, 'GET', '/openapi.yaml')).status, 200)
})

t.test('skills routes claim skills-2025-10-02; their multipart uploads are not JSON bodies', async (t) => {
  const files = [await toFile(Buffer.from('---\nname: strict-skill\ndescription: Strict.\n---\n'), 'strict-skill/SKILL.md')]
  const made = await s.client.beta.skills.create({ files, betas: ['skills-2025-10-02'] } as any)
  t.match(made, { id: /^skill_/, latest_version_id: '1' })
  t.equal((await s.client.beta.skills.retrieve(made.id, { betas: ['skills-2025-10-02'] } as any)).id, made.id)
  const refused = await s.client.beta.skills.list().then(
    () => undefined,
    (e: any) => e,
  )
  t.equal(refused?.status, 400)
  t.match(refused?.error?.error?.message, /skills-2025-10-02/)
})
