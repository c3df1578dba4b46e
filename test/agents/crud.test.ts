import t from 'tap'
import { connect } from '@nats-io/transport-node'
import { askActor } from '../../actors/kit/wire.js'
import { actorSubject } from '../../protocol/subjects.js'
import { stack } from '../helpers/stack.js'
import { raw } from '../helpers/troupe.js'
import { failure } from './_util.js'

const s = await stack()
const agents = s.client.beta.agents

t.test('create fills the response form', async (t) => {
  const a = await agents.create({ name: 'basic', model: 'claude-sonnet-4-6' })
  t.match(a.id, /^agent_/)
  t.equal(a.type, 'agent')
  t.equal(a.version, 1)
  t.equal(a.name, 'basic')
  t.same(a.model, { id: 'claude-sonnet-4-6' }, 'model string becomes {id}')
  t.equal(a.description, null)
  t.equal(a.system, null)
  t.same(a.tools, [])
  t.same(a.mcp_servers, [])
  t.same(a.skills, [])
  t.equal(a.multiagent, null)
  t.same(a.execution_identity, { type: 'service_account' })
  t.same(a.metadata, {})
  t.equal(a.archived_at, null)
  t.equal(a.created_at, a.updated_at)
  t.ok(!Number.isNaN(Date.parse(a.created_at)))
})

t.test('model forms', async (t) => {
  const a = await agents.create({ name: 'm', model: { id: 'claude-opus-4-8', effort: 'high', inference_geo: 'eu', speed: 'fast' } })
  t.same(a.model, { id: 'claude-opus-4-8', effort: { type: 'high' }, inference_geo: 'eu', speed: 'fast' })
  const b = await agents.create({ name: 'm', model: { id: 'x', effort: { type: 'xhigh' } } })
  t.same(b.model, { id: 'x', effort: { type: 'xhigh' } })
  const c = await agents.create({ name: 'm', model: { id: 'x', effort: null, inference_geo: null, speed: null } })
  t.same(c.model, { id: 'x' }, 'null means unset: keys left out')
  for (const [model, rule] of [
    ['', /model/],
    [{ id: '' }, /model\.id/],
    [{ id: 'x', effort: 'mid' }, /model\.effort/],
    [{ id: 'x', effort: { type: 'mid' } }, /model\.effort\.type/],
    [{ id: 'x', speed: 'slow' }, /model\.speed/],
    [{ id: 'x', extra: 1 }, /model\.extra is not a known field/],
    [5, /model must be/],
    [null, /model/],
  ] as Array<[unknown, RegExp]>) {
    const r = await raw(s.url, 'POST', '/v1/agents', { name: 'bad', model })
    t.equal(r.status, 400, JSON.stringify(model))
    t.match(r.json.error.message, rule, JSON.stringify(model))
  }
})

t.test('execution_identity', async (t) => {
  const a = await agents.create({ name: 'e', model: 'x', execution_identity: { type: 'aws_role', role_arn: 'arn:aws:iam::1:role/r' } })
  t.same(a.execution_identity, { type: 'aws_role', role_arn: 'arn:aws:iam::1:role/r' })
  const b = await agents.create({ name: 'e', model: 'x', execution_identity: null })
  t.same(b.execution_identity, { type: 'service_account' })
  const c = await agents.create({ name: 'e', model: 'x', execution_identity: { type: 'service_account' } })
  t.same(c.execution_identity, { type: 'service_account' })
  for (const ei of [{ type: 'aws_role' }, { type: 'aws_role', role_arn: 'a'.repeat(2049) }, { type: 'other' }, { type: 'service_account', x: 1 }]) {
    const r = await raw(s.url, 'POST', '/v1/agents', { name: 'bad', model: 'x', execution_identity: ei })
    t.equal(r.status, 400, JSON.stringify(ei).slice(0, 60))
    t.match(r.json.error.message, /execution_identity/)
  }
})

t.test('field limits and create-time nulls', async (t) => {
  const a = await agents.create({ name: 'n'.repeat(256), model: 'x', description: 'd'.repeat(2048), system: 's'.repeat(100000) })
  t.equal(a.name.length, 256)
  t.equal(a.system?.length, 100000)
  const b = await agents.create({ name: 'n', model: 'x', description: null, system: null, multiagent: null })
  t.equal(b.description, null)
  t.equal(b.system, null)
  const c = await agents.create({ name: 'n', model: 'x', description: '', system: '' })
  t.equal(c.description, null, '"" is stored as null')
  t.equal(c.system, null)
  const bad: Array<[unknown, RegExp]> = [
    [{ model: 'x' }, /name/],
    [{ name: 'x' }, /model/],
    [{ name: '', model: 'x' }, /name must be non-empty/],
    [{ name: 'n'.repeat(257), model: 'x' }, /name must be at most length 256/],
    [{ name: 'n', model: 'x', description: 'd'.repeat(2049) }, /description must be at most length 2048/],
    [{ name: 'n', model: 'x', system: 's'.repeat(100001) }, /system must be at most length 100000/],
    [{ name: 'n', model: 'x', tools: null }, /tools must be an array/],
    [{ name: 'n', model: 'x', mcp_servers: null }, /mcp_servers must be an array/],
    [{ name: 'n', model: 'x', skills: null }, /skills must be an array/],
    [{ name: 'n', model: 'x', metadata: null }, /metadata must be an object/],
    [{ name: 'n', model: 'x', metadata: { k: 5 } }, /metadata\.k must be a string/],
    [{ name: 'n', model: 'x', metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) }, /metadata/],
    [{ name: 'n', model: 'x', version: 1 }, /version is not a known field/],
    [{ name: 'n', model: 'x', bogus: true }, /bogus is not a known field/],
  ]
  for (const [body, rule] of bad) {
    const r = await raw(s.url, 'POST', '/v1/agents', body)
    t.equal(r.status, 400, rule.source)
    t.equal(r.json.error.type, 'invalid_request_error')
    t.match(r.json.error.message, rule)
  }
  t.equal((await raw(s.url, 'POST', '/v1/agents', '{not json')).status, 400, 'bad JSON')
})

t.test('get, get ?version=N, 404s', async (t) => {
  const a = await agents.create({ name: 'g1', model: 'x' })
  await agents.update(a.id, { name: 'g2' })
  await agents.update(a.id, { name: 'g3' })
  t.equal((await agents.retrieve(a.id)).name, 'g3')
  t.equal((await agents.retrieve(a.id)).version, 3)
  const v1 = await agents.retrieve(a.id, { version: 1 })
  t.equal(v1.version, 1)
  t.equal(v1.name, 'g1')
  t.equal((await agents.retrieve(a.id, { version: 2 })).name, 'g2')
  t.equal((await agents.retrieve(a.id, { version: 3 })).name, 'g3')
  const missing = await raw(s.url, 'GET', `/v1/agents/${a.id}?version=4`)
  t.equal(missing.status, 404)
  t.equal(missing.json.error.type, 'not_found_error')
  t.match(missing.json.error.message, /version 4/)
  t.equal((await raw(s.url, 'GET', `/v1/agents/${a.id}?version=0`)).status, 400)
  t.equal((await raw(s.url, 'GET', `/v1/agents/${a.id}?version=x`)).status, 400)
  const none = await raw(s.url, 'GET', '/v1/agents/agent_01NOPE')
  t.equal(none.status, 404)
  t.match(none.json.error.message, /agent_01NOPE/)
  t.equal((await raw(s.url, 'GET', '/v1/agents/env_01NOPE')).status, 404, 'wrong prefix')
  t.equal((await raw(s.url, 'POST', '/v1/agents/agent_01NOPE', { name: 'x' })).status, 404)
  t.equal((await raw(s.url, 'POST', '/v1/agents/agent_01NOPE/archive')).status, 404)
  t.equal((await raw(s.url, 'GET', '/v1/agents/agent_01NOPE/versions')).status, 404)
  t.match(await failure(agents.retrieve('agent_01NOPE')), { status: 404 })
  // Ids that could never be ours (KV-unsafe characters) are plain 404s, never 500s.
  for (const bad of ['agent_a%20b', 'agent_*', 'agent_%3E', 'agent_a.b', 'agent_']) {
    t.equal((await raw(s.url, 'GET', `/v1/agents/${bad}`)).status, 404, `GET ${bad}`)
    t.equal((await raw(s.url, 'POST', `/v1/agents/${bad}`, { name: 'x' })).status, 404, `update ${bad}`)
    t.equal((await raw(s.url, 'POST', `/v1/agents/${bad}/archive`)).status, 404, `archive ${bad}`)
    t.equal((await raw(s.url, 'GET', `/v1/agents/${bad}/versions`)).status, 404, `versions ${bad}`)
  }
})

t.test('archive: idempotent, no new version, read-only', async (t) => {
  const a = await agents.create({ name: 'arch', model: 'x', metadata: { k: 'v' } })
  const a1 = await agents.archive(a.id)
  t.ok(a1.archived_at)
  t.equal(a1.version, 1, 'archiving creates no version')
  const a2 = await agents.archive(a.id)
  t.equal(a2.archived_at, a1.archived_at, 'idempotent')
  t.equal(a2.updated_at, a1.updated_at)
  t.equal((await agents.retrieve(a.id)).archived_at, a1.archived_at)
  t.equal((await agents.retrieve(a.id, { version: 1 })).archived_at, a1.archived_at, 'archived_at shows on every version')
  for (const body of [{ name: 'new' }, { metadata: { k: null } }, {}, { version: 1, name: 'x' }]) {
    const r = await raw(s.url, 'POST', `/v1/agents/${a.id}`, body)
    t.equal(r.status, 400, JSON.stringify(body))
    t.equal(r.json.error.details.error_code, 'agent_archived')
    t.match(r.json.error.message, /archived/)
  }
  t.match(await failure(agents.update(a.id, { name: 'sdk' })), { status: 400, errorCode: 'agent_archived' })
})

t.test('resolve (internal op for sessions)', async (t) => {
  const nc = await connect({ servers: s.nats.url })
  t.teardown(() => nc.close())
  const ask = (params: Record<string, string>, body: unknown) =>
    askActor<any>(nc, actorSubject('agent', 'resolve'), { op: 'resolve', rid: 'req_test', params, query: {}, body }, 5000)
  const a = await agents.create({ name: 'r1', model: 'x' })
  await agents.update(a.id, { name: 'r2' })
  t.equal((await ask({ agent_id: a.id }, {})).name, 'r2', 'latest')
  t.equal((await ask({ agent_id: a.id }, { version: 1 })).name, 'r1', 'explicit version')
  t.equal((await ask({ agent_id: a.id }, undefined)).version, 2)
  t.match(await failure(ask({ agent_id: a.id }, { version: 3 })), { status: 404 })
  t.match(await failure(ask({ agent_id: 'agent_01NOPE' }, {})), { status: 404 })
  await agents.archive(a.id)
  t.match(await failure(ask({ agent_id: a.id }, {})), { status: 400, code: 'agent_archived' })
})
