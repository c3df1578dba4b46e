import t, { type Test } from 'tap'
import { ApiError } from '../../protocol/errors/api-error.js'
import { parse } from '../../protocol/validate.js'
import { LISTABLE_EVENT_TYPES } from '../../protocol/events.js'
import { EventsListQuery, EventsSend, EventsStreamQuery, type EventParamsT } from '../../protocol/schemas/events.js'
import { SessionCreate, SessionListQuery, SessionUpdate, type SessionListInput } from '../../protocol/schemas/session.js'

type Schema = Parameters<typeof parse>[0]

/** Each case must fail with a 400 whose message matches. */
function rejects(t: Test, schema: Schema, cases: Array<[unknown, RegExp | string]>) {
  for (const [input, want] of cases) {
    let err: unknown
    try {
      parse(schema, input)
    } catch (e) {
      err = e
    }
    const label = JSON.stringify(input).slice(0, 160)
    if (!(err instanceof ApiError)) {
      t.fail(`expected a 400 for ${label}`)
      continue
    }
    t.equal(err.status, 400, label)
    if (typeof want === 'string') t.equal(err.message, want, label)
    else t.match(err.message, want, label)
  }
}

const text = (s = 'hi') => ({ type: 'text', text: s })
const um = { type: 'user.message', content: [text()] }
const sm = { type: 'system.message', content: [text('note')] }
const budget = (amount: string) => ({ type: 'limit', max_list_cost: { amount, currency: 'USD' } })

t.test('session create: good input', async (t) => {
  t.same(parse(SessionCreate, { agent: 'agent_1', environment_id: 'env_1' }), { agent: 'agent_1', environment_id: 'env_1' })
  const full = {
    agent: {
      type: 'agent_with_overrides',
      id: 'agent_1',
      version: 2,
      model: { id: 'claude-sonnet-4-5', speed: 'fast' },
      system: null,
      tools: [{ type: 'agent_toolset_20260401' }],
      mcp_servers: [{ type: 'url', name: 'gh', url: 'https://mcp.example/x' }],
      skills: null,
    },
    environment_id: 'env_1',
    title: 'T',
    metadata: { k: 'v' },
    initial_events: [um, { type: 'user.define_outcome', description: 'd', rubric: { type: 'file', file_id: 'file_1' }, max_iterations: null }],
    resources: [
      { type: 'file', file_id: 'file_1', mount_path: '/mnt/session/uploads/x/y.txt' },
      { type: 'file', file_id: 'file_2', mount_path: null },
      { type: 'github_repository', url: 'https://github.com/a/b' },
    ],
    vault_ids: ['vlt_1'],
    budget: budget('2500'),
  }
  t.same(parse(SessionCreate, full), full, 'unknown resource keys are kept for the actor')
  t.same(parse(SessionCreate, { agent: { type: 'agent', id: 'agent_a' }, environment_id: 'env_e', budget: null, title: null }).budget, null)
  t.same(parse(SessionCreate, { agent: 'agent_a', environment_id: 'env_e', budget: budget('0') }).budget, budget('0'))
})

t.test('session create: bad input', async (t) => {
  const ok = { agent: 'agent_a', environment_id: 'env_e' }
  rejects(t, SessionCreate, [
    [{ environment_id: 'env_e' }, /^agent must be .*\(was missing\)/],
    [{ agent: 'agent_a' }, /^environment_id must be a string \(was missing\)/],
    [{ ...ok, environment_id: '' }, /^environment_id must be an id like env_01… \(letters, digits, _ or - after env_, at most 128 characters\) \(was ""\)/],
    ...['env_*', 'a..b', ' ', 'ÿ', 'env_\ud800', 'agent_1', `env_${'x'.repeat(125)}`].map((id): [unknown, RegExp] => [
      { ...ok, environment_id: id },
      /^environment_id must be an id like env_01…/,
    ]),
    [{ ...ok, vault_ids: ['vlt_a', 'v.x'] }, /^vault_ids\[1\] must be an id like vlt_01…/],
    [{ ...ok, resources: [{ type: 'file', file_id: 'file_a>' }] }, /^resources\[0\]\.file_id must be an id like file_01…/],
    [{ ...ok, resources: [{ type: 'file', file_id: 'file_a', mount_path: '/x' }] }, /^resources\[0\]\.mount_path must be an absolute path strictly beneath/],
    [{ ...ok, resources: [{ type: 'file', file_id: 'file_a', url: 'u' }] }, /^resources\[0\]\.url is not a known field/],
    [{ ...ok, metadata: ['x'] }, 'metadata must be an object (was an array)'],
    [{ ...ok, agent: '' }, /^agent must be an id like agent_01…/],
    [{ ...ok, agent: 5 }, /^agent must be a string or an object/],
    [{ ...ok, agent: { type: 'agent_ref', id: 'agent_a' } }, 'agent.type must be "agent" or "agent_with_overrides" (was "agent_ref")'],
    [{ ...ok, agent: { id: 'agent_a' } }, /^agent\.type must be "agent" or "agent_with_overrides"/],
    [{ ...ok, agent: { type: 'agent', id: 'agent_a', version: 0 } }, /^agent\.version must be at least 1/],
    [{ ...ok, agent: { type: 'agent', id: 'agent_a', model: 'm' } }, /^agent\.model is not a known field/],
    [{ ...ok, agent: { type: 'agent_with_overrides', id: 'agent_a', system: 's'.repeat(100001) } }, /^agent\.system must be .*100000/],
    [{ ...ok, agent: { type: 'agent_with_overrides', id: 'agent_a', tools: [{ type: 'nope' }] } }, /^agent\.tools\[0\]\.type must be/],
    [{ ...ok, title: 't'.repeat(513) }, /^title must be .*512/],
    [{ ...ok, metadata: null }, /^metadata must be an object/],
    [
      { ...ok, initial_events: [sm] },
      'initial_events[0].type must be user.message or user.define_outcome, the only event types allowed in initial_events (was "system.message")',
    ],
    [{ ...ok, initial_events: [{ type: 'user.interrupt' }] }, /^initial_events\[0\]\.type must be user\.message or user\.define_outcome/],
    [{ ...ok, initial_events: [{ type: 'user.message', content: [] }] }, /^initial_events\[0\]\.content must be non-empty/],
    [{ ...ok, initial_events: Array(51).fill(um) }, /^initial_events must be at most length 50/],
    [{ ...ok, initial_events: null }, /^initial_events must be an array/],
    [{ ...ok, resources: [{ file_id: 'file_f' }] }, /^resources\[0\]\.type must be a string \(was missing\)/],
    [{ ...ok, resources: [{ type: '' }] }, /^resources\[0\]\.type must be non-empty/],
    [{ ...ok, resources: Array(101).fill({ type: 'file' }) }, /^resources must be at most length 100/],
    [{ ...ok, vault_ids: [''] }, /^vault_ids\[0\] must be an id like vlt_01…/],
    [{ ...ok, vault_ids: Array(51).fill('vlt_v') }, /^vault_ids must be at most length 50/],
    [{ ...ok, budget: budget('012') }, /^budget\.max_list_cost\.amount must be a whole number of US cents .*\(was "012"\)/],
    [{ ...ok, budget: budget('1.5') }, /^budget\.max_list_cost\.amount must be a whole number/],
    [{ ...ok, budget: budget('-1') }, /^budget\.max_list_cost\.amount must be a whole number/],
    [{ ...ok, budget: { type: 'limit', max_list_cost: { amount: '1', currency: 'EUR' } } }, /^budget\.max_list_cost\.currency must be "USD"/],
    [{ ...ok, budget: { type: 'cap', max_list_cost: { amount: '1', currency: 'USD' } } }, /^budget\.type must be "limit"/],
    [{ ...ok, bogus: 1 }, /^bogus is not a known field/],
  ])
})

t.test('session update', async (t) => {
  const good = { title: null, metadata: { a: 'b', c: null }, agent: { tools: [], mcp_servers: null }, budget: budget('100') }
  t.same(parse(SessionUpdate, good), good)
  t.same(parse(SessionUpdate, {}), {})
  t.same(parse(SessionUpdate, { metadata: null, budget: null }), { metadata: null, budget: null })
  const fixed = (k: string) => `agent.${k} cannot be changed on a session (only agent.tools and agent.mcp_servers can)`
  rejects(t, SessionUpdate, [
    [{ agent: { model: 'm' } }, fixed('model')],
    [{ agent: { system: null } }, fixed('system')],
    [{ agent: { skills: [] } }, fixed('skills')],
    [{ agent: { id: 'x' } }, /^agent\.id is not a known field/],
    [{ agent: null }, /^agent must be an object/],
    [{ vault_ids: [] }, 'vault_ids cannot be changed after a session is created'],
    [{ vault_ids: null }, 'vault_ids cannot be changed after a session is created'],
    [{ title: 5 }, /^title must be a string or null/],
    [{ metadata: { k: 5 } }, /^metadata\.k must be a string or null/],
    [{ budget: budget('01') }, /^budget\.max_list_cost\.amount must be a whole number/],
    [{ environment_id: 'env_e' }, /^environment_id is not a known field/],
  ])
})

t.test('session list query', async (t) => {
  const q: SessionListInput = parse(SessionListQuery, {
    limit: '1000',
    order: 'asc',
    page: 'p',
    agent_id: 'agent_1',
    agent_version: '3',
    statuses: 'idle',
    include_archived: 'true',
    'created_at[gt]': '2025-01-01T00:00:00Z',
    'created_at[lte]': '2025-02-01T00:00:00Z',
    deployment_id: 'depl_1',
    memory_store_id: 'memstore_1',
    unknown_param: 'ignored',
  })
  t.equal(q.limit, 1000)
  t.equal(q.agent_version, 3)
  t.same(q.statuses, ['idle'])
  t.equal(q.include_archived, true)
  t.ok(q['created_at[gt]'] instanceof Date)
  t.same(parse(SessionListQuery, { statuses: ['running', 'terminated'] }).statuses, ['running', 'terminated'])
  rejects(t, SessionListQuery, [
    [{ agent_version: '2' }, /^agent_version requires agent_id/],
    [{ agent_id: 'agent_a', agent_version: '0' }, /^agent_version must be at least 1/],
    [{ agent_id: 'agent_a', agent_version: 'x' }, /^agent_version must be/],
    [{ limit: '1001' }, /^limit must be at most 1000/],
    [{ limit: '0' }, /^limit must be at least 1/],
    [{ order: 'up' }, /^order must be "asc" or "desc"/],
    [{ statuses: ['idle', 'archived'] }, /^statuses\[1\] must be "idle", "rescheduling", "running" or "terminated" \(was "archived"\)/],
    [{ include_archived: 'yes' }, /^include_archived must be/],
    [{ 'created_at[gte]': 'yesterday' }, /created_at\[gte\].* must be an ISO 8601/],
  ])
})

t.test('events send: good input', async (t) => {
  const events = [
    { type: 'user.interrupt', session_thread_id: null },
    { type: 'user.tool_confirmation', tool_use_id: 'sevt_1', result: 'deny', deny_message: 'no' },
    { type: 'user.tool_confirmation', tool_use_id: 'sevt_1', result: 'allow', deny_message: null },
    { type: 'user.custom_tool_result', custom_tool_use_id: 'sevt_2', content: [], is_error: null },
    {
      type: 'user.message',
      content: [
        text(),
        { type: 'image', source: { type: 'base64', data: 'AAAA', media_type: 'image/png' } },
        { type: 'image', source: { type: 'url', url: 'https://x.example/a.png' } },
        { type: 'document', source: { type: 'text', data: '', media_type: 'text/plain' }, title: null, context: 'c' },
        { type: 'document', source: { type: 'file', file_id: 'file_1' } },
      ],
    },
    { type: 'user.define_outcome', description: 'd', rubric: { type: 'text', content: 'r' }, max_iterations: 20 },
    {
      type: 'user.tool_result',
      tool_use_id: 'sevt_3',
      is_error: false,
      content: [{ type: 'search_result', source: 'https://x.example', title: 't', content: [text()], citations: { enabled: true } }],
    },
    sm,
  ]
  const out = parse(EventsSend, { events })
  t.same(out, { events })
  const first: EventParamsT = out.events[0]!
  t.equal(first.type, 'user.interrupt')
  for (const before of [um, { type: 'user.tool_result', tool_use_id: 'sevt_x' }, { type: 'user.custom_tool_result', custom_tool_use_id: 'sevt_x' }]) {
    t.same(parse(EventsSend, { events: [before, sm] }).events.length, 2, `system.message after ${before.type}`)
  }
})

t.test('events send: bad input', async (t) => {
  const ev = (...events: unknown[]) => ({ events })
  rejects(t, EventsSend, [
    [{}, /^events must be an array \(was missing\)/],
    [ev(), /^events must be non-empty/],
    [{ events: Array(101).fill(um) }, /^events must be at most length 100/],
    [{ events: [um], extra: 1 }, /^extra is not a known field/],
    [ev({ type: 'user.nope' }), /^events\[0\]\.type must be one of user\.message, user\.interrupt, .*system\.message \(was "user\.nope"\)/],
    [ev({}), /^events\[0\]\.type must be one of .* \(was missing\)/],
    [ev(5), /^events\[0\] must be an object/],
    [ev([]), /^events\[0\] must be an object/],
    [ev(um, { type: 'user.message', content: [] }), 'events[1].content must be non-empty'],
    [ev({ type: 'user.message', content: Array(1001).fill(text()) }), /^events\[0\]\.content must be at most length 1000/],
    [ev({ type: 'user.message', content: [text()], session_thread_id: 's' }), /^events\[0\]\.session_thread_id is not a known field/],
    [ev({ type: 'user.message', content: [{ type: 'video' }] }), /^events\[0\]\.content\[0\]\.type must be "document", "image" or "text"/],
    [ev({ type: 'user.message', content: [{ type: 'text', text: 'x', cache_control: {} }] }), /^events\[0\]\.content\[0\]\.cache_control is not a known field/],
    [
      ev({ type: 'user.message', content: [{ type: 'image', source: { type: 'base64', data: '', media_type: 'image/png' } }] }),
      /^events\[0\]\.content\[0\]\.source\.data must be non-empty/,
    ],
    [
      ev({ type: 'user.message', content: [{ type: 'image', source: { type: 'base64', data: 'A', media_type: 'image/bmp' } }] }),
      /^events\[0\]\.content\[0\]\.source\.media_type must be/,
    ],
    [
      ev({ type: 'user.message', content: [{ type: 'image', source: { type: 'url', url: 'ftp://x' } }] }),
      /^events\[0\]\.content\[0\]\.source\.url must be an http or https URL/,
    ],
    [
      ev({ type: 'user.message', content: [{ type: 'image', source: { type: 'file', file_id: '' } }] }),
      /^events\[0\]\.content\[0\]\.source\.file_id must be an id like file_01…/,
    ],
    [
      ev({ type: 'user.message', content: [{ type: 'document', source: { type: 'base64', data: 'A', media_type: 'image/png' } }] }),
      /^events\[0\]\.content\[0\]\.source\.media_type must be "application\/pdf"/,
    ],
    [
      ev({ type: 'user.message', content: [{ type: 'search_result', source: 's', title: 't', content: [] }] }),
      /^events\[0\]\.content\[0\]\.type must be "document", "image" or "text"/,
    ],
    [ev({ type: 'user.interrupt', session_thread_id: 5 }), /^events\[0\]\.session_thread_id must be a string or null/],
    [
      ev({ type: 'user.tool_confirmation', tool_use_id: 'sevt_x', result: 'allow', deny_message: 'no' }),
      'events[0].deny_message is only allowed when result is "deny"',
    ],
    [ev({ type: 'user.tool_confirmation', tool_use_id: 'sevt_x', result: 'maybe' }), /^events\[0\]\.result must be "allow" or "deny"/],
    [ev({ type: 'user.tool_confirmation', result: 'allow' }), /^events\[0\]\.tool_use_id must be a string \(was missing\)/],
    [ev({ type: 'user.custom_tool_result', custom_tool_use_id: '' }), /^events\[0\]\.custom_tool_use_id must be an id like sevt_01…/],
    [
      ev({ type: 'user.tool_result', tool_use_id: 'sevt_x', content: [{ type: 'search_result', source: 's', title: 't', content: [], citations: {} }] }),
      /^events\[0\]\.content\[0\]\.citations\.enabled must be boolean/,
    ],
    [
      ev({ type: 'user.tool_result', tool_use_id: 'sevt_x', content: [{ type: 'search_result', source: 's', title: 't', content: [{ type: 'image' }] }] }),
      /^events\[0\]\.content\[0\]\.content\[0\]\.type must be "text" \(was "image"\)/,
    ],
    [ev({ type: 'user.tool_result', tool_use_id: 'sevt_x', is_error: 'yes' }), /^events\[0\]\.is_error must be/],
    [ev({ type: 'user.define_outcome', description: '', rubric: { type: 'text', content: 'r' } }), /^events\[0\]\.description must be non-empty/],
    [
      ev({ type: 'user.define_outcome', description: 'd', rubric: { type: 'text', content: 'r'.repeat(262145) } }),
      /^events\[0\]\.rubric\.content must be at most length 262144/,
    ],
    [
      ev({ type: 'user.define_outcome', description: 'd', rubric: { type: 'url', url: 'x' } }),
      /^events\[0\]\.rubric\.type must be ("file" or "text"|"text" or "file") \(was "url"\)/,
    ],
    [
      ev({ type: 'user.define_outcome', description: 'd', rubric: { type: 'file', file_id: 'file_f' }, max_iterations: 21 }),
      /^events\[0\]\.max_iterations must be at most 20/,
    ],
    [
      ev({ type: 'user.define_outcome', description: 'd', rubric: { type: 'file', file_id: 'file_f' }, max_iterations: 0 }),
      /^events\[0\]\.max_iterations must be at least 1/,
    ],
    [ev({ type: 'system.message', content: [] }), /^events\[0\]\.content must be non-empty/],
    [
      ev({ type: 'system.message', content: [{ type: 'image', source: { type: 'file', file_id: 'file_f' } }] }),
      'events[0].content[0].type must be "text" (was "image")',
    ],
    [ev(sm), 'events[0] is a system.message, which must directly follow a user.message, user.tool_result or user.custom_tool_result'],
    [ev({ type: 'user.interrupt' }, sm), /^events\[1\] is a system\.message, which must directly follow/],
    [ev(um, sm, um), 'events[1] is a system.message, which must be the last event of the request'],
    [ev(um, sm, sm), /^events\[1\] is a system\.message, which must be the last event/],
  ])
})

t.test('events list query', async (t) => {
  const q = parse(EventsListQuery, { types: 'user.message', limit: '1000', order: 'desc', 'created_at[gte]': '2025-01-01T00:00:00Z', other: 'x' })
  t.same(q.types, ['user.message'])
  t.equal(q.limit, 1000)
  t.same(parse(EventsListQuery, { types: [...LISTABLE_EVENT_TYPES] }).types, [...LISTABLE_EVENT_TYPES])
  t.same(parse(EventsListQuery, {}), {})
  rejects(t, EventsListQuery, [
    [{ types: ['agent.message', 'session.deleted'] }, /^types\[1\] must be a session event type .*\(was "session\.deleted"\)/],
    [{ types: 'event_delta' }, /^types\[0\] must be a session event type/],
    [{ limit: '1001' }, /^limit must be at most 1000/],
    [{ order: 'sideways' }, /^order must be "asc" or "desc"/],
    [{ 'created_at[lt]': 'soon' }, /created_at\[lt\].* must be an ISO 8601/],
  ])
})

t.test('events stream query', async (t) => {
  t.same(parse(EventsStreamQuery, { event_deltas: 'agent.message' }), { event_deltas: ['agent.message'] })
  t.same(parse(EventsStreamQuery, { event_deltas: ['agent.message', 'agent.thinking'], after: 'sevt_1', x: 'y' }).event_deltas, [
    'agent.message',
    'agent.thinking',
  ])
  rejects(t, EventsStreamQuery, [
    [{ event_deltas: ['agent.tool_use'] }, /^event_deltas\[0\] must be "agent\.message" or "agent\.thinking"/],
    [{ after: '' }, /^after must be non-empty/],
  ])
})
