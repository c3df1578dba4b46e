import t from 'tap'
import { stack } from '../helpers/stack.js'
import { raw } from '../helpers/troupe.js'
import { rosterOf } from './_util.js'

const s = await stack()
const agents = s.client.beta.agents
const mk = (name: string, model: any = 'x', extra: Record<string, unknown> = {}) => agents.create({ name, model, ...extra } as any)
const coord = (entries: unknown[], extra: Record<string, unknown> = {}) =>
  raw(s.url, 'POST', '/v1/agents', { name: 'coord', model: 'x', multiagent: { type: 'coordinator', agents: entries }, ...extra })

async function rejects(t: any, entries: unknown[], rule: RegExp, extra: Record<string, unknown> = {}) {
  const r = await coord(entries, extra)
  t.equal(r.status, 400, rule.source)
  t.equal(r.json?.error?.type, 'invalid_request_error')
  t.match(r.json?.error?.message, rule, rule.source)
}

t.test('entries resolve to concrete references; advisor last', async (t) => {
  const w1 = await mk('worker1')
  await agents.update(w1.id, { name: 'worker1b' }) // latest is v2
  const w2 = await mk('worker2')
  const w3 = await mk('worker3')
  await agents.update(w3.id, { name: 'worker3b' })
  const r = await coord([
    w1.id,
    { type: 'agent', id: w2.id },
    { type: 'agent', id: w3.id, version: 1 },
    { type: 'self' },
    { type: 'advisor', model: 'claude-opus-4-8' },
  ])
  t.equal(r.status, 200, r.text)
  const c = r.json
  t.same(
    c.multiagent,
    {
      type: 'coordinator',
      agents: [
        { type: 'agent', id: w1.id, version: 2 },
        { type: 'agent', id: w2.id, version: 1 },
        { type: 'agent', id: w3.id, version: 1 },
        { type: 'agent', id: c.id, version: 1 },
        { type: 'advisor', model: 'claude-opus-4-8' },
      ],
    },
    'string and {type:agent,id} take the latest; explicit version kept; self is the version being written',
  )
  // The roster is a snapshot: later updates of members do not move it.
  await agents.update(w2.id, { name: 'worker2b' })
  t.same((await agents.retrieve(c.id)).multiagent, c.multiagent)
  // Self follows the coordinator's own new versions; other pins stay.
  const u = await agents.update(c.id, { system: 'be helpful' })
  t.equal(u.version, 2)
  t.same(rosterOf(u)?.[3], { type: 'agent', id: c.id, version: 2 })
  t.same(rosterOf(u)?.[1], { type: 'agent', id: w2.id, version: 1 })
  t.same(rosterOf(await agents.retrieve(c.id, { version: 1 }))?.[3], { type: 'agent', id: c.id, version: 1 })
  // Re-sending the same roster input re-resolves it: w2 moves to its latest (v2), which is a material change.
  const re = await agents.update(c.id, {
    multiagent: {
      type: 'coordinator',
      agents: [w1.id, { type: 'agent', id: w2.id }, { type: 'agent', id: w3.id, version: 1 }, { type: 'self' }, { type: 'advisor', model: 'claude-opus-4-8' }],
    },
  })
  t.equal(re.version, 3)
  t.same(rosterOf(re)?.[1], { type: 'agent', id: w2.id, version: 2 })
  t.same(rosterOf(re)?.[3], { type: 'agent', id: c.id, version: 3 })
  // And sending it once more changes nothing: self does not count as a change.
  const same = await agents.update(c.id, {
    multiagent: {
      type: 'coordinator',
      agents: [w1.id, w2.id, { type: 'agent', id: w3.id, version: 1 }, { type: 'self' }, { type: 'advisor', model: 'claude-opus-4-8' }],
    },
  })
  t.equal(same.version, 3)
  const cleared = await agents.update(c.id, { multiagent: null })
  t.equal(cleared.multiagent, null)
  t.equal(cleared.version, 4)
})

t.test('self-only roster and self on create', async (t) => {
  const r = await coord([{ type: 'self' }])
  t.equal(r.status, 200)
  t.same(r.json.multiagent.agents, [{ type: 'agent', id: r.json.id, version: 1 }])
})

t.test('roster rejections', async (t) => {
  const w = await mk('w')
  const w2 = await mk('w2')
  const gone = await mk('gone')
  await agents.archive(gone.id)
  const nested = (await coord([w.id])).json
  const many = await Promise.all(Array.from({ length: 21 }, (_, i) => mk(`m${i}`)))

  await rejects(t, [], /multiagent\.agents: a coordinator roster has 1 to 20 entries \(got 0\)/)
  await rejects(
    t,
    many.map((a) => a.id),
    /multiagent\.agents: a coordinator roster has 1 to 20 entries \(got 21\)/,
  )
  t.equal((await coord(many.slice(0, 20).map((a) => a.id))).status, 200, '20 entries are fine')
  await rejects(t, [w.id, gone.id], /multiagent\.agents\[1\]: agent .* is archived/)
  await rejects(t, [{ type: 'agent', id: gone.id, version: 1 }], /multiagent\.agents\[0\]: agent .* is archived/)
  await rejects(t, [w.id, 'agent_01MISSING'], /multiagent\.agents\[1\]: agent agent_01MISSING does not exist/)
  // A malformed id is a shape error (400 naming the rule); it never reaches the store.
  for (const weird of ['agent_*', 'agent_a.b', 'not-an-agent', 'agent_> x']) {
    await rejects(t, [weird], /multiagent\.agents\[0\] must be an id like agent_01…/)
    await rejects(t, [{ type: 'agent', id: weird }], /multiagent\.agents\[0\]\.id must be an id like agent_01…/)
  }
  await rejects(t, [{ type: 'agent', id: w.id, version: 2 }], /multiagent\.agents\[0\]: agent .* has no version 2 \(latest is 1\)/)
  await rejects(t, [w.id, w2.id, { type: 'agent', id: w.id }], /multiagent\.agents\[2\]: agent .* is already in the roster \(multiagent\.agents\[0\]\)/)
  await rejects(t, [w.id, { type: 'agent', id: w.id, version: 1 }], /multiagent\.agents\[1\]: .*already in the roster/)
  await rejects(t, [w.id, nested.id], new RegExp(`multiagent\\.agents\\[1\\]: agent ${nested.id} version 1 is itself a coordinator`))
  await rejects(t, [{ type: 'self' }, w.id, { type: 'self' }], /multiagent\.agents\[2\]: \{"type":"self"\} may appear at most once/)
  await rejects(t, [w.id, { type: 'advisor', model: 'a' }, { type: 'advisor', model: 'b' }], /multiagent\.agents\[2\]: at most one advisor entry/)
  await rejects(t, [{ type: 'advisor', model: 'a' }, w.id], /multiagent\.agents\[0\]: the advisor entry must be the last entry/)
  await rejects(t, [{ type: 'advisor', model: 'a' }], /needs at least one agent besides the advisor/)
  await rejects(t, [{ type: 'advisor', model: 'a', extra: 1 }], /multiagent\.agents\[0\]/)
  await rejects(t, [{ type: 'advisor' }], /multiagent\.agents\[0\]/)
  await rejects(t, [{ type: 'agent', id: w.id, version: 0 }], /multiagent\.agents\[0\]/)
  await rejects(t, [{ type: 'self', id: w.id }], /multiagent\.agents\[0\]/)
  await rejects(t, [''], /multiagent\.agents\[0\]/)
  await rejects(t, [5], /multiagent\.agents\[0\]/)
  const r = await raw(s.url, 'POST', '/v1/agents', { name: 'c', model: 'x', multiagent: { type: 'coordinator' } })
  t.equal(r.status, 400)
  t.match(r.json.error.message, /multiagent\.agents/)
})

t.test('self counts for duplicates; own id must be referenced as self', async (t) => {
  const w = await mk('w')
  const c = await agents.create({ name: 'c', model: 'x', multiagent: { type: 'coordinator', agents: [w.id, { type: 'self' }] } })
  const dup = await raw(s.url, 'POST', `/v1/agents/${c.id}`, { multiagent: { type: 'coordinator', agents: [{ type: 'self' }, c.id] } })
  t.equal(dup.status, 400)
  t.match(dup.json.error.message, /multiagent\.agents\[1\]: agent .* is already in the roster \(multiagent\.agents\[0\]\)/)
  const own = await raw(s.url, 'POST', `/v1/agents/${c.id}`, { multiagent: { type: 'coordinator', agents: [{ type: 'agent', id: c.id, version: 1 }] } })
  t.equal(own.status, 400)
  t.match(own.json.error.message, /multiagent\.agents\[0\]: .* is this agent; reference it with \{"type":"self"\}/)
})

t.test('archived agents cannot be referenced, but existing rosters keep their snapshot', async (t) => {
  const w = await mk('w')
  const c = await agents.create({ name: 'c', model: 'x', multiagent: { type: 'coordinator', agents: [w.id] } })
  await agents.archive(w.id)
  const again = await coord([w.id])
  t.equal(again.status, 400)
  t.match(again.json.error.message, /is archived/)
  const kept = await agents.retrieve(c.id)
  t.same(rosterOf(kept), [{ type: 'agent', id: w.id, version: 1 }])
  const u = await agents.update(c.id, { name: 'c2' })
  t.same(rosterOf(u), [{ type: 'agent', id: w.id, version: 1 }], 'unrelated updates keep the roster as stored')
})

t.test('inference_geo agreement', async (t) => {
  const eu = await mk('eu', { id: 'x', inference_geo: 'eu' })
  const us = await mk('us', { id: 'x', inference_geo: 'us' })
  const plain = await mk('plain')

  t.equal((await coord([eu.id, { type: 'advisor', model: 'y' }], { model: { id: 'x', inference_geo: 'eu' } })).status, 200, 'same pin')
  t.equal((await coord([plain.id, { type: 'self' }])).status, 200, 'both unset')
  const mismatch = await coord([eu.id, us.id], { model: { id: 'x', inference_geo: 'eu' } })
  t.equal(mismatch.status, 400)
  t.match(mismatch.json.error.message, /multiagent\.agents\[1\]: agent .* version 1 pins model\.inference_geo "us" but this coordinator pins "eu"/)
  const unsetMember = await coord([plain.id], { model: { id: 'x', inference_geo: 'eu' } })
  t.equal(unsetMember.status, 400)
  t.match(unsetMember.json.error.message, /multiagent\.agents\[0\]: .* leaves model\.inference_geo unset but this coordinator pins "eu"/)
  const unsetCoord = await coord([eu.id])
  t.equal(unsetCoord.status, 400)
  t.match(unsetCoord.json.error.message, /multiagent\.agents\[0\]: .* pins model\.inference_geo "eu" but this coordinator leaves it unset/)
  // An explicit old version is judged by that version's model.
  const moved = await mk('moved', { id: 'x', inference_geo: 'eu' })
  await agents.update(moved.id, { model: { id: 'x', inference_geo: 'us' } })
  t.equal((await coord([{ type: 'agent', id: moved.id, version: 1 }], { model: { id: 'x', inference_geo: 'eu' } })).status, 200)
  t.equal((await coord([moved.id], { model: { id: 'x', inference_geo: 'eu' } })).status, 400, 'latest pins us')

  // A model change that breaks the stored roster must replace or clear it in the same update.
  const c = await agents.create({ name: 'c', model: { id: 'x', inference_geo: 'eu' }, multiagent: { type: 'coordinator', agents: [eu.id, { type: 'self' }] } })
  const broken = await raw(s.url, 'POST', `/v1/agents/${c.id}`, { model: { id: 'x', inference_geo: 'us' } })
  t.equal(broken.status, 400)
  t.match(
    broken.json.error.message,
    /^model\.inference_geo: this change breaks the stored coordinator roster .*multiagent\.agents\[0\]: agent .* pins model\.inference_geo "eu" but this coordinator pins "us"/,
  )
  const dropped = await raw(s.url, 'POST', `/v1/agents/${c.id}`, { model: 'x' })
  t.equal(dropped.status, 400, 'a model string drops the pin, which breaks it too')
  const sameGeo = await agents.update(c.id, { model: { id: 'y', inference_geo: 'eu' } })
  t.equal(sameGeo.version, 2, 'a model change that keeps the pin is fine')
  const replaced = await agents.update(c.id, {
    model: { id: 'y', inference_geo: 'us' },
    multiagent: { type: 'coordinator', agents: [us.id, { type: 'self' }] },
  })
  t.equal(replaced.version, 3)
  t.same(rosterOf(replaced), [
    { type: 'agent', id: us.id, version: 1 },
    { type: 'agent', id: c.id, version: 3 },
  ])
  const clearedTogether = await agents.update(c.id, { model: 'x', multiagent: null })
  t.equal(clearedTogether.multiagent, null)
  t.same(clearedTogether.model, { id: 'x' })
  // Replacing with a roster that does not agree with the new model is rejected too.
  const bad = await raw(s.url, 'POST', `/v1/agents/${c.id}`, { model: { id: 'x', inference_geo: 'us' }, multiagent: { type: 'coordinator', agents: [eu.id] } })
  t.equal(bad.status, 400)
  t.match(bad.json.error.message, /multiagent\.agents\[0\]/)
})

t.test('custom tools may not take a name the multiagent offers the primary thread', async (t) => {
  const w = await mk('reserved-worker')
  const custom = (name: string) => ({ type: 'custom', name, description: 'd', input_schema: { type: 'object', properties: {} } })
  for (const name of ['list_agents', 'send_to_agent']) {
    await rejects(t, [w.id], new RegExp(`^tools\\[1\\]\\.name: "${name}" is reserved`), { tools: [custom('ok'), custom(name)] })
  }
  await rejects(t, [w.id, { type: 'advisor', model: 'x' }], /^tools\[0\]\.name: "advisor" is reserved/, { tools: [custom('advisor')] })
  // Offered only when the multiagent has what serves them: no advisor leaves `advisor` free, no subagents the roster's.
  t.equal((await coord([w.id], { tools: [custom('advisor')] })).status, 200)
  const m20 = (subagents: unknown, tools: unknown[]) =>
    raw(s.url, 'POST', '/v1/agents', {
      name: 'm20',
      model: 'x',
      multiagent: { type: 'multiagent_20261001', advisor: { type: 'enabled', model: 'x' }, subagents },
      tools,
    })
  const r20 = await m20({ type: 'enabled', predefined_agents: [w.id] }, [custom('send_to_agent')])
  t.equal(r20.status, 400)
  t.match(r20.json?.error?.message, /^tools\[0\]\.name: "send_to_agent" is reserved/)
  t.equal((await m20({ type: 'disabled' }, [custom('send_to_agent')])).status, 200, 'an advisor alone leaves send_to_agent free')

  // Updates: new tools against the stored roster, and a new roster against the stored tools; nothing is stored.
  const c = (await coord([w.id], { tools: [custom('advisor')] })).json
  const u1 = await raw(s.url, 'POST', `/v1/agents/${c.id}`, { version: c.version, tools: [custom('list_agents')] })
  t.equal(u1.status, 400)
  t.match(u1.json?.error?.message, /^tools\[0\]\.name: "list_agents" is reserved/)
  const u2 = await raw(s.url, 'POST', `/v1/agents/${c.id}`, {
    version: c.version,
    multiagent: { type: 'coordinator', agents: [w.id, { type: 'advisor', model: 'x' }] },
  })
  t.equal(u2.status, 400)
  t.match(u2.json?.error?.message, /^tools\[0\]\.name: "advisor" is reserved/)
  t.same((await agents.retrieve(c.id)).version, c.version, 'neither update stored a version')

  // A session's override of the tools, at create and by update.
  const env = await s.client.beta.environments.create({ name: 'reserved-env' } as any)
  const ses = await raw(s.url, 'POST', '/v1/sessions', {
    agent: { type: 'agent_with_overrides', id: c.id, tools: [custom('send_to_agent')] },
    environment_id: env.id,
  })
  t.equal(ses.status, 400, ses.text)
  t.match(ses.json?.error?.message, /^agent\.tools\[0\]\.name: "send_to_agent" is reserved/)
  const ok = await raw(s.url, 'POST', '/v1/sessions', { agent: c.id, environment_id: env.id })
  t.equal(ok.status, 200, ok.text)
  const su = await raw(s.url, 'POST', `/v1/sessions/${ok.json.id}`, { agent: { tools: [custom('list_agents')] } })
  t.equal(su.status, 400, su.text)
  t.match(su.json?.error?.message, /^agent\.tools\[0\]\.name: "list_agents" is reserved/)
})
