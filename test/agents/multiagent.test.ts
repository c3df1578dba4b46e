import t from 'tap'
import { stack } from '../helpers/stack.js'
import { failure } from './_util.js'

/**
 * The `multiagent_20261001` topology (WIRE §4, issue 28 point 6) through the official client: all three keys returned,
 * predefined agents on the coordinator roster's rules and resolved to concrete versions, updates merged level by
 * level (actors/agent/multiagent.ts), and the parts not built (workflows, inline agents) refused naming the field.
 */

const s = await stack()
const agents = s.client.beta.agents
const D = { type: 'disabled' }
const ma = (body: Record<string, unknown> = {}) => ({ type: 'multiagent_20261001', ...body })
const mk = (name: string, extra: Record<string, unknown> = {}) => agents.create({ name, model: 'claude-sonnet-4-5', ...extra } as any)

t.test('create and get: all three keys, defaults disabled, predefined agents as concrete references', async (t) => {
  const bare = await mk('bare', { multiagent: ma() })
  t.same(bare.multiagent, { type: 'multiagent_20261001', advisor: D, subagents: D, workflows: D }, 'every default is what runs: disabled')
  const nulls = await mk('nulls', { multiagent: ma({ advisor: null, subagents: null, workflows: null }) })
  t.same(nulls.multiagent, bare.multiagent, 'null takes the default')

  const w1 = await mk('w1')
  await agents.update(w1.id, { system: 'v2' }) // latest is version 2
  const w2 = await mk('w2')
  const lead = await mk('lead', {
    multiagent: ma({
      advisor: { type: 'enabled', model: 'claude-opus-4-5' },
      subagents: {
        type: 'enabled',
        inline_agents: { type: 'disabled' },
        predefined_agents: [w1.id, { type: 'agent', id: w2.id, version: 1 }, { type: 'self' }],
      },
      workflows: { type: 'disabled' },
    }),
  })
  const want = {
    type: 'multiagent_20261001',
    advisor: { type: 'enabled', model: 'claude-opus-4-5' },
    subagents: {
      type: 'enabled',
      inline_agents: D,
      predefined_agents: [
        { type: 'agent', id: w1.id, version: 2 },
        { type: 'agent', id: w2.id, version: 1 },
        { type: 'agent', id: lead.id, version: 1 },
      ],
    },
    workflows: D,
  }
  t.same(lead.multiagent, want)
  t.same((await agents.retrieve(lead.id)).multiagent, want, 'stored as returned')
  const listed: any[] = []
  for await (const a of agents.list()) if (a.id === lead.id) listed.push(a)
  t.same(listed[0]?.multiagent, want, 'listed as returned')
})

t.test('updates merge level by level onto a stored multiagent_20261001; other changes replace', async (t) => {
  const w1 = await mk('m-w1')
  const w2 = await mk('m-w2')
  const lead = await mk('m-lead', {
    multiagent: ma({ advisor: { type: 'enabled', model: 'adv-1' }, subagents: { type: 'enabled', predefined_agents: [w1.id, { type: 'self' }] } }),
  })
  const subs = (id: string, self: number) => ({
    type: 'enabled',
    inline_agents: D,
    predefined_agents: [
      { type: 'agent', id, version: 1 },
      { type: 'agent', id: lead.id, version: self },
    ],
  })

  // Only advisor sent: subagents and workflows kept; self follows the new version.
  const u1 = await agents.update(lead.id, { multiagent: ma({ advisor: { type: 'enabled', model: 'adv-2' } }) } as any)
  t.equal(u1.version, 2)
  t.same(u1.multiagent, { type: 'multiagent_20261001', advisor: { type: 'enabled', model: 'adv-2' }, subagents: subs(w1.id, 2), workflows: D })

  // subagents of the stored type: predefined_agents replaced, inline_agents kept; advisor kept.
  const u2 = await agents.update(lead.id, { multiagent: ma({ subagents: { type: 'enabled', predefined_agents: [w2.id] } }) } as any)
  t.same(u2.multiagent, {
    type: 'multiagent_20261001',
    advisor: { type: 'enabled', model: 'adv-2' },
    subagents: { type: 'enabled', inline_agents: D, predefined_agents: [{ type: 'agent', id: w2.id, version: 1 }] },
    workflows: D,
  })

  // Nothing sent but the type: nothing changes, no new version.
  const same = await agents.update(lead.id, { multiagent: ma() } as any)
  t.equal(same.version, u2.version)
  t.same(same.multiagent, u2.multiagent)

  // null takes the default; a different type replaces.
  const u3 = await agents.update(lead.id, { multiagent: ma({ advisor: null, subagents: { type: 'disabled' } }) } as any)
  t.same(u3.multiagent, { type: 'multiagent_20261001', advisor: D, subagents: D, workflows: D })

  // A coordinator replaces it whole, and a multiagent_20261001 onto a coordinator starts from the defaults.
  const c = await agents.update(lead.id, { multiagent: { type: 'coordinator', agents: [w1.id] } } as any)
  t.same(c.multiagent, { type: 'coordinator', agents: [{ type: 'agent', id: w1.id, version: 1 }] })
  const back = await agents.update(lead.id, { multiagent: ma({ advisor: { type: 'enabled', model: 'adv-3' } }) } as any)
  t.same(back.multiagent, { type: 'multiagent_20261001', advisor: { type: 'enabled', model: 'adv-3' }, subagents: D, workflows: D })
  const cleared = await agents.update(lead.id, { multiagent: null })
  t.equal(cleared.multiagent, null, 'null clears')
})

t.test('refusals name the field', async (t) => {
  const w = await mk('r-w')
  const nested = await mk('r-nested', { multiagent: ma({ subagents: { type: 'enabled', predefined_agents: [w.id] } }) })
  const archived = await mk('r-archived')
  await agents.archive(archived.id)
  const cases: Array<[Record<string, unknown>, number, RegExp]> = [
    [ma({ workflows: { type: 'enabled' } }), 422, /^multiagent\.workflows: workflow runs are not available/],
    [ma({ workflows: { type: 'enabled', predefined_agents: [w.id] } }), 422, /^multiagent\.workflows: /],
    [
      ma({ subagents: { type: 'enabled', inline_agents: { type: 'enabled' }, predefined_agents: [w.id] } }),
      422,
      /^multiagent\.subagents\.inline_agents: inline agents are not available/,
    ],
    [
      ma({ subagents: { type: 'enabled' } }),
      400,
      /^multiagent\.subagents\.predefined_agents: with inline_agents disabled, an enabled subagents needs at least one predefined agent/,
    ],
    [
      ma({ subagents: { type: 'enabled', predefined_agents: Array.from({ length: 21 }, () => w.id) } }),
      400,
      /^multiagent\.subagents\.predefined_agents: at most 20/,
    ],
    [ma({ subagents: { type: 'enabled', predefined_agents: [w.id, w.id] } }), 400, /^multiagent\.subagents\.predefined_agents\[1\]: .*already in the roster/],
    [
      ma({ subagents: { type: 'enabled', predefined_agents: [{ type: 'self' }, { type: 'self' }] } }),
      400,
      /predefined_agents\[1\]: \{"type":"self"\} may appear at most once/,
    ],
    [ma({ subagents: { type: 'enabled', predefined_agents: ['agent_01JAAAAAAAAAAAAAAAAAAAAAAA'] } }), 400, /predefined_agents\[0\]: agent \w+ does not exist/],
    [ma({ subagents: { type: 'enabled', predefined_agents: [archived.id] } }), 400, /predefined_agents\[0\]: agent \w+ is archived/],
    [ma({ subagents: { type: 'enabled', predefined_agents: [nested.id] } }), 400, /predefined_agents\[0\]: .*has multiagent/],
    [ma({ advisor: { type: 'enabled' } }), 400, /multiagent\.advisor/],
    [ma({ subagents: { type: 'enabled', predefined_agents: [w.id], extra: 1 } }), 400, /multiagent\.subagents/],
  ]
  for (const [multiagent, status, rule] of cases) {
    const e = await failure(mk('refused', { multiagent }))
    t.equal(e.status, status, rule.source)
    t.match(e.error?.error?.message, rule, rule.source)
    if (status === 422) t.equal(e.error?.error?.details?.error_code, 'multiagent_unavailable')
  }
  // An update is validated merged: enabling subagents onto stored disabled ones needs its list.
  const lead = await mk('r-lead', { multiagent: ma() })
  const e = await failure(agents.update(lead.id, { multiagent: ma({ subagents: { type: 'enabled' } }) } as any))
  t.equal(e.status, 400)
  t.match(e.error?.error?.message, /^multiagent\.subagents\.predefined_agents: /)
  const wf = await failure(
    agents.update(lead.id, {
      multiagent: ma({ workflows: null, subagents: { type: 'enabled', predefined_agents: [w.id], inline_agents: { type: 'enabled' } } }),
    } as any),
  )
  t.equal(wf.status, 422)
  t.equal((await agents.retrieve(lead.id)).version, 1, 'nothing written')
  // A multiagent_20261001 agent cannot join a coordinator's roster either (depth 1).
  const c = await failure(mk('r-coord', { multiagent: { type: 'coordinator', agents: [nested.id] } }))
  t.equal(c.status, 400)
  t.match(c.error?.error?.message, /^multiagent\.agents\[0\]: .*has multiagent/)
})

t.test('inference_geo: predefined agents agree with the agent, at write, on a model-only update, and on a merge', async (t) => {
  const eu = await mk('g-eu', { model: { id: 'claude-sonnet-4-5', inference_geo: 'eu' } })
  const e = await failure(mk('g-lead', { multiagent: ma({ subagents: { type: 'enabled', predefined_agents: [eu.id] } }) }))
  t.equal(e.status, 400)
  t.match(e.error?.error?.message, /^multiagent\.subagents\.predefined_agents\[0\]: agent \w+ version 1 pins model\.inference_geo "eu"/)
  const lead = await mk('g-lead', {
    model: { id: 'claude-sonnet-4-5', inference_geo: 'eu' },
    multiagent: ma({ subagents: { type: 'enabled', predefined_agents: [eu.id] } }),
  })
  const moved = await failure(agents.update(lead.id, { model: 'claude-sonnet-4-5' } as any))
  t.equal(moved.status, 400, 'a model-only update re-checks the stored list')
  t.match(moved.error?.error?.message, /predefined_agents\[0\]/)
  const merged = await failure(agents.update(lead.id, { model: 'claude-sonnet-4-5', multiagent: ma({ advisor: { type: 'enabled', model: 'a' } }) } as any))
  t.equal(merged.status, 400, 'a merge that keeps the list re-checks it against the new model')
  const ok = await agents.update(lead.id, { model: 'claude-sonnet-4-5', multiagent: ma({ subagents: { type: 'disabled' } }) } as any)
  t.same(ok.multiagent, { type: 'multiagent_20261001', advisor: D, subagents: D, workflows: D })
})
