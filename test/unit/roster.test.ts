import t, { type Test } from 'tap'
import { ApiError } from '../../protocol/errors/api-error.js'
import { parse } from '../../protocol/validate.js'
import {
  CoordinatorParams,
  MultiagentParams,
  type Agent,
  type CoordinatorParamsT,
  type Multiagent,
  type MultiagentParamsT,
} from '../../protocol/schemas/agent.js'
import { resolveMultiagent } from '../../actors/agent/multiagent.js'
import { geoBreach, MAX_ROSTER, resolveRoster, SELF_VERSION, stampSelf, storedMembers } from '../../actors/agent/roster.js'
import type { AgentStore } from '../../actors/agent/state.js'

/**
 * Coordinator rosters (actors/agent/roster.ts) against an in-memory fake of AgentStore's two reads (`head`,
 * `version`), with AgentStore's semantics: the head is the latest version; `version(head, n)` answers the head
 * for n = head.version and undefined outside 1..head.version or for a version record that cannot be read.
 */

const SELF = 'agent_SELF'

function agent(id: string, version: number, extra: Partial<Agent> = {}): Agent {
  return {
    id,
    type: 'agent',
    version,
    name: id,
    description: null,
    system: null,
    model: { id: 'm' },
    tools: [],
    mcp_servers: [],
    skills: [],
    multiagent: null,
    execution_identity: { type: 'service_account' },
    metadata: {},
    created_at: '2026-01-01T00:00:00Z',
    updated_at: '2026-01-01T00:00:00Z',
    archived_at: null,
    ...extra,
  }
}

/** Agents by id, each a list of its versions (index 0 = version 1); `unreadable` versions read as missing. */
function fakeStore(agents: Record<string, Array<Partial<Agent>>>, opts: { archived?: string[]; unreadable?: string[] } = {}) {
  const reads: string[] = []
  const versions = new Map(Object.entries(agents).map(([id, vs]) => [id, vs.map((v, i) => agent(id, i + 1, v))]))
  const store = {
    async head(id: string | undefined) {
      reads.push(`head ${id}`)
      const vs = id === undefined ? undefined : versions.get(id)
      if (!vs) return undefined
      const latest = vs[vs.length - 1]!
      return { agent: { ...latest, archived_at: opts.archived?.includes(latest.id) ? '2026-02-01T00:00:00Z' : null } }
    },
    async version(head: Agent, n: number) {
      reads.push(`version ${head.id} ${n}`)
      if (!Number.isInteger(n) || n < 1 || n > head.version) return undefined
      if (n === head.version) return head
      if (opts.unreadable?.includes(`${head.id}@${n}`)) return undefined
      const v = versions.get(head.id)?.[n - 1]
      return v ? { ...v, archived_at: head.archived_at } : undefined
    },
  }
  return { store: store as unknown as AgentStore, reads }
}

/** The roster as the gateway hands it over: validated by the route's schema. */
const roster = (agents: unknown[]) => parse(CoordinatorParams, { type: 'coordinator', agents }) as CoordinatorParamsT
const advisor = (model = 'claude-opus-4-8') => ({ type: 'advisor', model })
const self = { type: 'self' }

async function refusal(p: Promise<unknown>): Promise<ApiError | undefined> {
  try {
    await p
  } catch (e) {
    if (e instanceof ApiError) return e
    throw e
  }
  return undefined
}

async function refuses(t: Test, p: Promise<unknown>, message: string, status = 400, code?: string) {
  const e = await refusal(p)
  t.ok(e, `refused: ${message}`)
  if (!e) return
  t.equal(e.status, status, `${status}: ${message}`)
  t.equal(e.type, 'invalid_request_error')
  t.equal(e.message, message)
  t.equal(e.code, code)
}

const world = () =>
  fakeStore(
    {
      agent_W1: [{}, { model: { id: 'm', inference_geo: 'eu' } }],
      agent_W2: [{}],
      agent_W3: [{}, {}, {}],
      agent_COORD: [{}, { multiagent: { type: 'coordinator', agents: [{ type: 'agent', id: 'agent_W2', version: 1 }] } }],
      agent_GONE: [{}],
      agent_HOLE: [{}, {}, {}],
      [SELF]: [{}],
    },
    { archived: ['agent_GONE'], unreadable: ['agent_HOLE@2'] },
  )

t.test('entries resolve to concrete references in order; self is SELF_VERSION; the advisor stays last', async (t) => {
  const { store } = world()
  const r = await resolveRoster(
    roster(['agent_W1', { type: 'agent', id: 'agent_W2' }, { type: 'agent', id: 'agent_W3', version: 1 }, self, advisor('adv-model')]),
    SELF,
    store,
  )
  t.equal(SELF_VERSION, 0)
  t.same(r.multiagent, {
    type: 'coordinator',
    agents: [
      { type: 'agent', id: 'agent_W1', version: 2 },
      { type: 'agent', id: 'agent_W2', version: 1 },
      { type: 'agent', id: 'agent_W3', version: 1 },
      { type: 'agent', id: SELF, version: SELF_VERSION },
      { type: 'advisor', model: 'adv-model' },
    ],
  })
  t.same(
    r.members,
    [
      { at: 'multiagent.agents[0]', id: 'agent_W1', version: 2, geo: 'eu' },
      { at: 'multiagent.agents[1]', id: 'agent_W2', version: 1, geo: undefined },
      { at: 'multiagent.agents[2]', id: 'agent_W3', version: 1, geo: undefined },
    ],
    'members: the independently referenced agents, not self, not the advisor',
  )
})

t.test('a roster of self alone, or self and an advisor, needs no store', async (t) => {
  const { store, reads } = world()
  const a = await resolveRoster(roster([self]), SELF, store)
  t.same(a, { multiagent: { type: 'coordinator', agents: [{ type: 'agent', id: SELF, version: 0 }] }, members: [] })
  const b = await resolveRoster(roster([self, advisor()]), SELF, store)
  t.same(b.multiagent.agents, [
    { type: 'agent', id: SELF, version: 0 },
    { type: 'advisor', model: 'claude-opus-4-8' },
  ])
  t.same(reads, [])
  // A self id that is not stored yet (a create) is fine: self is never read.
  const c = await resolveRoster(roster(['agent_W2', self]), 'agent_NEW', store)
  t.same(c.multiagent.agents[1], { type: 'agent', id: 'agent_NEW', version: 0 })
})

t.test('roster size: 1 to MAX_ROSTER entries', async (t) => {
  t.equal(MAX_ROSTER, 20)
  const ids = Array.from({ length: 21 }, (_, i) => `agent_M${i}`)
  const { store } = fakeStore(Object.fromEntries(ids.map((id) => [id, [{}]])))
  await refuses(t, resolveRoster(roster([]), SELF, store), 'multiagent.agents: a coordinator roster has 1 to 20 entries (got 0)')
  await refuses(t, resolveRoster(roster(ids), SELF, store), 'multiagent.agents: a coordinator roster has 1 to 20 entries (got 21)')
  const twenty = await resolveRoster(roster(ids.slice(0, 20)), SELF, store)
  t.equal(twenty.multiagent.agents.length, 20)
  const withAdvisor = await resolveRoster(roster([...ids.slice(0, 19), advisor()]), SELF, store)
  t.equal(withAdvisor.multiagent.agents.length, 20, 'the advisor counts towards the 20')
  await refuses(t, resolveRoster(roster([...ids.slice(0, 20), advisor()]), SELF, store), 'multiagent.agents: a coordinator roster has 1 to 20 entries (got 21)')
})

t.test('shape rules, with the exact messages, checked before anything is read', async (t) => {
  const cases: Array<[unknown[], string]> = [
    [['agent_MISSING', advisor('a'), advisor('b')], 'multiagent.agents[2]: at most one advisor entry is allowed (another is multiagent.agents[1])'],
    [[advisor('a'), 'agent_MISSING', advisor('b')], 'multiagent.agents[2]: at most one advisor entry is allowed (another is multiagent.agents[0])'],
    [[advisor(), 'agent_MISSING'], 'multiagent.agents[0]: the advisor entry must be the last entry of the roster'],
    [['agent_MISSING', advisor(), self], 'multiagent.agents[1]: the advisor entry must be the last entry of the roster'],
    [[self, 'agent_MISSING', self], 'multiagent.agents[2]: {"type":"self"} may appear at most once (already at multiagent.agents[0])'],
    [
      ['agent_MISSING', 'agent_W1', { type: 'agent', id: 'agent_W1', version: 1 }],
      'multiagent.agents[2]: agent agent_W1 is already in the roster (multiagent.agents[1]); roster entries must be distinct agents',
    ],
    [
      ['agent_MISSING', { type: 'agent', id: 'agent_W1', version: 1 }, { type: 'agent', id: 'agent_W1', version: 2 }],
      'multiagent.agents[2]: agent agent_W1 is already in the roster (multiagent.agents[1]); roster entries must be distinct agents',
    ],
    [
      ['agent_MISSING', self, SELF],
      `multiagent.agents[2]: agent ${SELF} is already in the roster (multiagent.agents[1]); roster entries must be distinct agents`,
    ],
    [['agent_MISSING', { type: 'agent', id: SELF, version: 1 }], `multiagent.agents[1]: ${SELF} is this agent; reference it with {"type":"self"}`],
    [['agent_MISSING', SELF, self], `multiagent.agents[1]: ${SELF} is this agent; reference it with {"type":"self"}`],
    [[advisor()], 'multiagent.agents: a coordinator roster needs at least one agent besides the advisor'],
  ]
  for (const [entries, message] of cases) {
    const { store, reads } = world()
    await refuses(t, resolveRoster(roster(entries), SELF, store), message)
    t.same(reads, [], `${message.slice(0, 40)}…: nothing read`)
  }
})

const m2 = (body: Record<string, unknown>) => parse(MultiagentParams, { type: 'multiagent_20261001', ...body }) as MultiagentParamsT
const D = { type: 'disabled' }

t.test('multiagent_20261001: defaults, resolution, and refusals naming the field', async (t) => {
  const { store, reads } = world()
  t.same(await resolveMultiagent(m2({}), null, SELF, store), {
    multiagent: { type: 'multiagent_20261001', advisor: D, subagents: D, workflows: D },
    members: [],
  })
  t.same((await resolveMultiagent(m2({ advisor: null, subagents: null, workflows: null }), null, SELF, store)).multiagent, {
    type: 'multiagent_20261001',
    advisor: D,
    subagents: D,
    workflows: D,
  })
  const r = await resolveMultiagent(
    m2({
      advisor: { type: 'enabled', model: 'adv' },
      subagents: { type: 'enabled', predefined_agents: ['agent_W1', self, { type: 'agent', id: 'agent_W3', version: 1 }] },
    }),
    null,
    SELF,
    store,
  )
  t.same(r.multiagent, {
    type: 'multiagent_20261001',
    advisor: { type: 'enabled', model: 'adv' },
    subagents: {
      type: 'enabled',
      inline_agents: D,
      predefined_agents: [
        { type: 'agent', id: 'agent_W1', version: 2 },
        { type: 'agent', id: SELF, version: SELF_VERSION },
        { type: 'agent', id: 'agent_W3', version: 1 },
      ],
    },
    workflows: D,
  })
  t.same(r.members, [
    { at: 'multiagent.subagents.predefined_agents[0]', id: 'agent_W1', version: 2, geo: 'eu' },
    { at: 'multiagent.subagents.predefined_agents[2]', id: 'agent_W3', version: 1, geo: undefined },
  ])

  reads.length = 0
  const P = 'multiagent.subagents.predefined_agents'
  const enabled = (predefined_agents: unknown[], extra = {}) => m2({ subagents: { type: 'enabled', predefined_agents, ...extra } })
  const unavailable: Array<[MultiagentParamsT, string]> = [
    [m2({ workflows: { type: 'enabled' } }), 'multiagent.workflows: workflow runs are not available on this server yet; send {"type":"disabled"} or omit it'],
    [
      enabled(['agent_W1'], { inline_agents: { type: 'enabled' } }),
      'multiagent.subagents.inline_agents: inline agents are not available on this server yet; send {"type":"disabled"} or omit it',
    ],
  ]
  for (const [input, message] of unavailable) await refuses(t, resolveMultiagent(input, null, SELF, store), message, 422, 'multiagent_unavailable')
  const cases: Array<[MultiagentParamsT, string]> = [
    [
      m2({ subagents: { type: 'enabled' } }),
      `${P}: with inline_agents disabled, an enabled subagents needs at least one predefined agent (or send subagents {"type":"disabled"})`,
    ],
    [enabled([]), `${P}: with inline_agents disabled, an enabled subagents needs at least one predefined agent (or send subagents {"type":"disabled"})`],
    [enabled(Array.from({ length: 21 }, (_, i) => `agent_X${i}`)), `${P}: at most 20 predefined agents (got 21)`],
    [enabled(['agent_W1', 'agent_W1']), `${P}[1]: agent agent_W1 is already in the roster (${P}[0]); roster entries must be distinct agents`],
    [enabled([self, self]), `${P}[1]: {"type":"self"} may appear at most once (already at ${P}[0])`],
    [enabled([SELF]), `${P}[0]: ${SELF} is this agent; reference it with {"type":"self"}`],
    [enabled(['agent_NOPE']), `${P}[0]: agent agent_NOPE does not exist`],
    [enabled(['agent_GONE']), `${P}[0]: agent agent_GONE is archived`],
    [enabled(['agent_COORD']), `${P}[0]: agent agent_COORD version 2 is itself a coordinator (it has multiagent); rosters are one level deep`],
  ]
  for (const [input, message] of cases) await refuses(t, resolveMultiagent(input, null, SELF, store), message)
})

t.test('multiagent_20261001 onto a stored one merges level by level; onto anything else it replaces', async (t) => {
  const { store } = world()
  const stored: Multiagent = {
    type: 'multiagent_20261001',
    advisor: { type: 'enabled', model: 'adv' },
    subagents: {
      type: 'enabled',
      inline_agents: D as { type: 'disabled' },
      predefined_agents: [
        { type: 'agent', id: 'agent_W1', version: 2 },
        { type: 'agent', id: SELF, version: 3 },
      ],
    },
    workflows: D as { type: 'disabled' },
  }
  const merge = async (body: Record<string, unknown>, onto: Multiagent | null = stored) => (await resolveMultiagent(m2(body), onto, SELF, store)).multiagent
  const kept = await resolveMultiagent(m2({}), stored, SELF, store)
  t.same(kept.multiagent, stored, 'nothing sent: everything kept')
  t.same(
    kept.members,
    [{ at: 'multiagent.subagents.predefined_agents[0]', id: 'agent_W1', version: 2, geo: 'eu' }],
    "a kept list's members (for inference_geo)",
  )
  t.same(await merge({ advisor: null }), { ...stored, advisor: D }, 'null: the default')
  t.same(await merge({ advisor: { type: 'enabled', model: 'other' } }), { ...stored, advisor: { type: 'enabled', model: 'other' } })
  t.same(
    await merge({ subagents: { type: 'enabled', predefined_agents: ['agent_W2'] } }),
    {
      ...stored,
      subagents: { type: 'enabled', inline_agents: D, predefined_agents: [{ type: 'agent', id: 'agent_W2', version: 1 }] },
    },
    'a sent list replaces; advisor kept',
  )
  t.same(await merge({ subagents: { type: 'enabled', inline_agents: null } }), stored, 'inline_agents null: its default; the list kept')
  t.same(await merge({ subagents: D, workflows: null }), { ...stored, subagents: D }, 'another type replaces')
  await refuses(
    t,
    merge({ subagents: { type: 'enabled', predefined_agents: null } }),
    'multiagent.subagents.predefined_agents: with inline_agents disabled, an enabled subagents needs at least one predefined agent (or send subagents {"type":"disabled"})',
    400,
  )
  const off = { ...stored, subagents: D } as Multiagent
  await refuses(
    t,
    merge({ subagents: { type: 'enabled' } }, off),
    'multiagent.subagents.predefined_agents: with inline_agents disabled, an enabled subagents needs at least one predefined agent (or send subagents {"type":"disabled"})',
    400,
    undefined,
  )
  const coord: Multiagent = { type: 'coordinator', agents: [{ type: 'agent', id: 'agent_W2', version: 1 }] }
  t.same(
    await merge({ advisor: { type: 'enabled', model: 'adv' } }, coord),
    { type: 'multiagent_20261001', advisor: { type: 'enabled', model: 'adv' }, subagents: D, workflows: D },
    'onto a coordinator: defaults',
  )
  t.same(
    stampSelf(stored, SELF, 9),
    {
      ...stored,
      subagents: {
        ...stored.subagents,
        predefined_agents: [
          { type: 'agent', id: 'agent_W1', version: 2 },
          { type: 'agent', id: SELF, version: 9 },
        ],
      },
    },
    'self stamped in predefined_agents',
  )
  t.same(await storedMembers(stored, SELF, store), [{ at: 'multiagent.subagents.predefined_agents[0]', id: 'agent_W1', version: 2, geo: 'eu' }])
})

t.test('resolution against the store: missing, archived, unknown or unreadable versions, nested coordinators', async (t) => {
  const cases: Array<[unknown[], string]> = [
    [['agent_W1', 'agent_MISSING'], 'multiagent.agents[1]: agent agent_MISSING does not exist'],
    [[{ type: 'agent', id: 'agent_MISSING', version: 1 }], 'multiagent.agents[0]: agent agent_MISSING does not exist'],
    [['agent_GONE'], 'multiagent.agents[0]: agent agent_GONE is archived'],
    [[{ type: 'agent', id: 'agent_GONE', version: 1 }], 'multiagent.agents[0]: agent agent_GONE is archived'],
    [[{ type: 'agent', id: 'agent_W2', version: 2 }], 'multiagent.agents[0]: agent agent_W2 has no version 2 (latest is 1)'],
    [[self, { type: 'agent', id: 'agent_W3', version: 9 }], 'multiagent.agents[1]: agent agent_W3 has no version 9 (latest is 3)'],
    [[{ type: 'agent', id: 'agent_HOLE', version: 2 }], 'multiagent.agents[0]: version 2 of agent agent_HOLE is not readable'],
    [['agent_COORD'], 'multiagent.agents[0]: agent agent_COORD version 2 is itself a coordinator (it has multiagent); rosters are one level deep'],
    [
      [{ type: 'agent', id: 'agent_COORD', version: 2 }, advisor()],
      'multiagent.agents[0]: agent agent_COORD version 2 is itself a coordinator (it has multiagent); rosters are one level deep',
    ],
  ]
  for (const [entries, message] of cases) {
    const { store } = world()
    await refuses(t, resolveRoster(roster(entries), SELF, store), message)
  }
})

t.test('the coordinator rule is about the version referenced, not the head', async (t) => {
  const { store, reads } = world()
  const r = await resolveRoster(roster([{ type: 'agent', id: 'agent_COORD', version: 1 }]), SELF, store)
  t.same(r.multiagent.agents, [{ type: 'agent', id: 'agent_COORD', version: 1 }])
  t.same(reads, ['head agent_COORD', 'version agent_COORD 1'])
  // Versions other than the unreadable one resolve.
  const hole = await resolveRoster(
    roster([
      { type: 'agent', id: 'agent_HOLE', version: 1 },
      { type: 'agent', id: 'agent_W3', version: 3 },
    ]),
    SELF,
    store,
  )
  t.same(hole.multiagent.agents, [
    { type: 'agent', id: 'agent_HOLE', version: 1 },
    { type: 'agent', id: 'agent_W3', version: 3 },
  ])
  t.same(
    hole.members.map((m) => m.version),
    [1, 3],
  )
})

t.test('the geo of a member is the version referenced', async (t) => {
  const { store } = world()
  const r = await resolveRoster(roster([{ type: 'agent', id: 'agent_W1', version: 1 }, 'agent_W2']), SELF, store)
  t.same(r.members, [
    { at: 'multiagent.agents[0]', id: 'agent_W1', version: 1, geo: undefined },
    { at: 'multiagent.agents[1]', id: 'agent_W2', version: 1, geo: undefined },
  ])
  const latest = await resolveRoster(roster([{ type: 'agent', id: 'agent_W1' }]), SELF, store)
  t.same(latest.members, [{ at: 'multiagent.agents[0]', id: 'agent_W1', version: 2, geo: 'eu' }])
})

t.test('geoBreach: every member must agree with the coordinator on inference_geo', async (t) => {
  t.equal(geoBreach({ id: 'm' }, []), undefined)
  t.equal(geoBreach({ id: 'm' }, [{ at: 'multiagent.agents[0]', id: 'agent_A', version: 1, geo: undefined }]), undefined)
  t.equal(geoBreach({ id: 'm', inference_geo: 'eu' }, [{ at: 'multiagent.agents[0]', id: 'agent_A', version: 1, geo: 'eu' }]), undefined)
  t.equal(
    geoBreach({ id: 'm', inference_geo: 'eu' }, [
      { at: 'multiagent.agents[0]', id: 'agent_A', version: 1, geo: 'eu' },
      { at: 'multiagent.agents[2]', id: 'agent_B', version: 3, geo: 'us' },
    ]),
    'multiagent.agents[2]: agent agent_B version 3 pins model.inference_geo "us" but this coordinator pins "eu"; every referenced agent must agree on inference_geo',
  )
  t.equal(
    geoBreach({ id: 'm', inference_geo: 'eu' }, [{ at: 'multiagent.agents[1]', id: 'agent_A', version: 2, geo: undefined }]),
    'multiagent.agents[1]: agent agent_A version 2 leaves model.inference_geo unset but this coordinator pins "eu"; every referenced agent must agree on inference_geo',
  )
  t.equal(
    geoBreach({ id: 'm' }, [{ at: 'multiagent.agents[0]', id: 'agent_A', version: 1, geo: 'us' }]),
    'multiagent.agents[0]: agent agent_A version 1 pins model.inference_geo "us" but this coordinator leaves it unset; every referenced agent must agree on inference_geo',
  )
  t.match(
    geoBreach({ id: 'm' }, [
      { at: 'multiagent.agents[0]', id: 'agent_A', version: 1, geo: 'us' },
      { at: 'multiagent.agents[1]', id: 'agent_B', version: 1, geo: 'eu' },
    ]),
    /^multiagent\.agents\[0\]/,
    'the first breach is named',
  )
})

t.test('stampSelf: self entries take the version being written; nothing else moves', async (t) => {
  t.equal(stampSelf(null, SELF, 3), null)
  const m: Multiagent = {
    type: 'coordinator',
    agents: [
      { type: 'agent', id: 'agent_W1', version: 2 },
      { type: 'agent', id: SELF, version: SELF_VERSION },
      { type: 'advisor', model: 'a' },
    ],
  }
  const stamped = stampSelf(m, SELF, 7)
  t.same(stamped, {
    type: 'coordinator',
    agents: [
      { type: 'agent', id: 'agent_W1', version: 2 },
      { type: 'agent', id: SELF, version: 7 },
      { type: 'advisor', model: 'a' },
    ],
  })
  t.equal(m.agents[1]!.type === 'agent' && m.agents[1]!.version, SELF_VERSION, 'the input is not changed')
  // Stamping is idempotent and what material-change detection relies on: two resolutions stamp the same.
  t.same(stampSelf(stamped, SELF, 7), stamped)
  t.same(stampSelf(m, 'agent_OTHER', 7), m, 'another id: no self entry')
})

t.test("storedMembers: the stored roster's referenced agents, without self and the advisor", async (t) => {
  const { store } = world()
  const m: Multiagent = {
    type: 'coordinator',
    agents: [
      { type: 'agent', id: 'agent_W1', version: 2 },
      { type: 'agent', id: SELF, version: 4 },
      { type: 'agent', id: 'agent_W1x', version: 1 },
      { type: 'agent', id: 'agent_W1', version: 1 },
      { type: 'advisor', model: 'a' },
    ],
  }
  t.same(
    await storedMembers(m, SELF, store),
    [
      { at: 'multiagent.agents[0]', id: 'agent_W1', version: 2, geo: 'eu' },
      { at: 'multiagent.agents[2]', id: 'agent_W1x', version: 1, geo: undefined },
      { at: 'multiagent.agents[3]', id: 'agent_W1', version: 1, geo: undefined },
    ],
    'a member that no longer reads has no geo; indexes are the stored ones',
  )
  t.same(await storedMembers({ type: 'coordinator', agents: [{ type: 'agent', id: SELF, version: 1 }] }, SELF, store), [])
})
