import t from 'tap'
import Anthropic from '@anthropic-ai/sdk'
import { stack } from '../helpers/stack.js'
import { raw } from '../helpers/troupe.js'
import { failure } from './_util.js'

const s = await stack()
const agents = s.client.beta.agents
const post = (id: string, body: unknown) => raw(s.url, 'POST', `/v1/agents/${id}`, body)

t.test('material changes bump the version; no change keeps it and writes nothing', async (t) => {
  const a = await agents.create({ name: 'v', model: 'x', system: 'sys' })
  const same = await agents.update(a.id, { name: 'v', system: 'sys', model: 'x' })
  t.equal(same.version, 1, 'identical values: same version')
  t.equal(same.updated_at, a.updated_at, 'no write: updated_at unchanged')
  const empty = await agents.update(a.id, {})
  t.equal(empty.version, 1)
  t.equal(empty.updated_at, a.updated_at)
  const v2 = await agents.update(a.id, { name: 'v2' })
  t.equal(v2.version, 2)
  t.ok(v2.updated_at >= a.updated_at)
  t.equal(v2.created_at, a.created_at)
  const changes: Array<Record<string, unknown>> = [
    { description: 'd' },
    { system: 'sys2' },
    { model: { id: 'x', speed: 'fast' } },
    { tools: [{ type: 'custom', name: 't', description: 'd', input_schema: { type: 'object' } }] },
    { execution_identity: { type: 'aws_role', role_arn: 'arn' } },
  ]
  let version = 2
  for (const body of changes) {
    const r = await post(a.id, body)
    t.equal(r.status, 200, JSON.stringify(body))
    t.equal(r.json.version, ++version, `${Object.keys(body)[0]} is material`)
    const again = await post(a.id, body)
    t.equal(again.json.version, version, `repeating ${Object.keys(body)[0]} is a no-op`)
  }
  t.equal((await agents.retrieve(a.id)).version, version)
})

t.test('stale version is a 409 that is not retried', async (t) => {
  const a = await agents.create({ name: 'c', model: 'x' })
  await agents.update(a.id, { name: 'c2', version: 1 })
  await agents.update(a.id, { name: 'c3', version: 2 })
  const r = await post(a.id, { name: 'c4', version: 1 })
  t.equal(r.status, 409)
  t.equal(r.headers.get('x-should-retry'), 'false')
  t.equal(r.json.error.type, 'conflict_error')
  t.match(r.json.error.message, /version: stale \(current version is 3\)/)
  const ahead = await post(a.id, { name: 'c4', version: 9 })
  t.equal(ahead.status, 409, 'a version from the future is stale too')
  const noop = await post(a.id, { version: 2 })
  t.equal(noop.status, 409, 'stale even when nothing would change')
  const ok = await agents.update(a.id, { name: 'c4', version: 3 })
  t.equal(ok.version, 4)
  const sameVersionNoop = await agents.update(a.id, { version: 4 })
  t.equal(sameVersionNoop.version, 4)
  // The official client with its default retries obeys x-should-retry: false: one request only.
  let calls = 0
  const counting = new Anthropic({
    baseURL: s.url,
    apiKey: 'k',
    maxRetries: 2,
    fetch: (input: any, init?: any) => {
      calls++
      return fetch(input, init)
    },
  })
  t.match(await failure(counting.beta.agents.update(a.id, { name: 'c5', version: 1 })), { status: 409 })
  t.equal(calls, 1, 'not retried')
  t.equal((await raw(s.url, 'POST', `/v1/agents/${a.id}`, { version: 0 })).status, 400)
  t.equal((await raw(s.url, 'POST', `/v1/agents/${a.id}`, { version: 1.5 })).status, 400)
  t.equal((await raw(s.url, 'POST', `/v1/agents/${a.id}`, { version: null })).status, 400)
})

t.test('metadata: per-key patch, not material', async (t) => {
  const a = await agents.create({ name: 'md', model: 'x', metadata: { a: '1', b: '2' } })
  const u = await agents.update(a.id, { metadata: { a: null, c: '3', b: '22' } })
  t.same(u.metadata, { b: '22', c: '3' })
  t.equal(u.version, 1, 'metadata alone creates no version')
  t.ok(u.updated_at >= a.updated_at, 'but it is a write')
  t.same((await agents.retrieve(a.id)).metadata, { b: '22', c: '3' })
  t.same((await agents.retrieve(a.id, { version: 1 })).metadata, { b: '22', c: '3' }, 'the current version record carries it')
  const noop = await agents.update(a.id, { metadata: { b: '22', zz: null } })
  t.equal(noop.updated_at, u.updated_at, 'a patch that changes nothing writes nothing')
  const both = await agents.update(a.id, { name: 'md2', metadata: { d: '4' } })
  t.equal(both.version, 2)
  t.same(both.metadata, { b: '22', c: '3', d: '4' })
  const keep = await agents.update(a.id, { system: 's' })
  t.same(keep.metadata, both.metadata, 'omitted metadata keeps the map')
  const many = Object.fromEntries(Array.from({ length: 14 }, (_, i) => [`k${i}`, 'v']))
  const r = await post(a.id, { metadata: many })
  t.equal(r.status, 400)
  t.match(r.json.error.message, /metadata: at most 16 keys/)
  const nul = await post(a.id, { metadata: null })
  t.equal(nul.status, 400, 'metadata object cannot be null')
  t.match(nul.json.error.message, /metadata/)
  const long = await post(a.id, { metadata: { ['k'.repeat(65)]: 'v' } })
  t.equal(long.status, 400)
})

t.test('null rules', async (t) => {
  const a = await agents.create({
    name: 'nr',
    model: { id: 'x', effort: 'low' },
    system: 'sys',
    description: 'desc',
    execution_identity: { type: 'aws_role', role_arn: 'arn' },
    mcp_servers: [{ type: 'url', name: 'm', url: 'https://mcp.example.com' }],
    tools: [
      { type: 'mcp_toolset', mcp_server_name: 'm' },
      { type: 'custom', name: 'c', description: 'd', input_schema: { type: 'object' } },
    ],
  })
  for (const [body, rule] of [
    [{ name: null }, /name must be a string/],
    [{ model: null }, /model must be a string or an object/],
    [{ metadata: null }, /metadata must be an object/],
    [{ version: null }, /version must be/],
    [{ name: '' }, /name must be non-empty/],
  ] as Array<[unknown, RegExp]>) {
    const r = await post(a.id, body)
    t.equal(r.status, 400, JSON.stringify(body))
    t.match(r.json.error.message, rule)
  }
  const u1 = await agents.update(a.id, { system: null, description: '' })
  t.equal(u1.system, null, 'system null clears')
  t.equal(u1.description, null, 'description "" clears')
  t.equal(u1.version, 2)
  const u2 = await agents.update(a.id, { execution_identity: null })
  t.same(u2.execution_identity, { type: 'service_account' }, 'execution_identity null is the default')
  const u3 = await agents.update(a.id, { tools: null, mcp_servers: null })
  t.same(u3.tools, [], 'tools null clears')
  t.same(u3.mcp_servers, [], 'mcp_servers null clears')
  const u4 = await agents.update(a.id, { skills: null })
  t.equal(u4.version, u3.version, 'skills null on empty skills is a no-op')
  const u5 = await agents.update(a.id, { skills: [] })
  t.same(u5.skills, [])
  t.equal(u5.version, u3.version)
  const u6 = await agents.update(a.id, { multiagent: null })
  t.equal(u6.multiagent, null)
  t.equal(u6.version, u3.version)
  const u7 = await agents.update(a.id, { description: 'back', system: 'back' })
  const u8 = await agents.update(a.id, { description: null, system: '' })
  t.equal(u8.description, null)
  t.equal(u8.system, null)
  t.equal(u8.version, u7.version + 1)
})

t.test('model is replaced whole; effort is kept unless given', async (t) => {
  const a = await agents.create({ name: 'mw', model: { id: 'x', effort: 'high', inference_geo: 'eu', speed: 'fast' } })
  const u1 = await agents.update(a.id, { model: { id: 'y' } })
  t.same(u1.model, { id: 'y', effort: { type: 'high' } }, 'omitted inference_geo and speed clear; omitted effort keeps')
  const u2 = await agents.update(a.id, { model: 'z' })
  t.same(u2.model, { id: 'z', effort: { type: 'high' } }, 'a model string keeps effort too')
  const u3 = await agents.update(a.id, { model: { id: 'z', effort: null } })
  t.same(u3.model, { id: 'z' }, 'effort null clears')
  const u4 = await agents.update(a.id, { model: { id: 'z', effort: { type: 'max' }, inference_geo: 'us' } })
  t.same(u4.model, { id: 'z', effort: { type: 'max' }, inference_geo: 'us' })
  const u5 = await agents.update(a.id, { model: { id: 'z', effort: 'max', inference_geo: 'us' } })
  t.equal(u5.version, u4.version, 'same model in the other effort form is no change')
})

t.test('unknown fields and bad shapes on update', async (t) => {
  const a = await agents.create({ name: 'uf', model: 'x' })
  for (const [body, rule] of [
    [{ bogus: 1 }, /bogus is not a known field/],
    [{ tools: [{ type: 'custom', name: 'c', description: 'd', input_schema: { type: 'object' }, extra: 1 }] }, /tools\[0\]\.extra is not a known field/],
    [{ system: 's'.repeat(100001) }, /system must be at most length 100000/],
    [{ description: 5 }, /description must be/],
  ] as Array<[unknown, RegExp]>) {
    const r = await post(a.id, body)
    t.equal(r.status, 400, JSON.stringify(body).slice(0, 80))
    t.match(r.json.error.message, rule)
  }
  t.equal((await agents.retrieve(a.id)).version, 1, 'nothing was written')
})

t.test('concurrent updates each get their own version', async (t) => {
  const a = await agents.create({ name: 'cc', model: 'x' })
  const results = await Promise.all(Array.from({ length: 8 }, (_, i) => agents.update(a.id, { name: `cc-${i}` })))
  const versions = results.map((r) => r.version).sort((x, y) => x - y)
  t.same(versions, [2, 3, 4, 5, 6, 7, 8, 9], 'every material update got a distinct version')
  const list: number[] = []
  for await (const v of agents.versions.list(a.id, { limit: 3 })) list.push(v.version)
  t.same(list, [1, 2, 3, 4, 5, 6, 7, 8, 9])
  const names = new Set<string>()
  for await (const v of agents.versions.list(a.id)) names.add(v.name)
  t.equal(names.size, 9, 'each version keeps its own record')
})
