import t from 'tap'
import { history, sessionStack, newSession as newSessionOf, step as stepOf } from './_helpers.js'

/**
 * The web tools of agent_toolset_20260401 (issue 43 point 5): `web_search` and `web_fetch` offered to the model as the
 * Messages API's own server tools, with their settings; their uses and results (run by the provider inside the
 * response) stored as `agent.tool_use` and `agent.tool_result` and handed back in the conversation as the API sent them;
 * their counts in usage and list cost; an endpoint that refuses them told as a `session.error` naming the tool, the turn
 * going on without it. Through the official client against `troupe serve` and the fake Messages API.
 */

const s = await sessionStack()

const say = (text: string) => ({ type: 'user.message', content: [{ type: 'text', text }] })
const of = (events: any[], type: string) => events.filter((e) => e.type === type)
const webDefs = (req: { body: any }) => ((req.body.tools ?? []) as any[]).filter((d) => /^web_(search|fetch)_/.test(d.type ?? ''))
const names = (req: { body: any }) => ((req.body.tools ?? []) as any[]).map((d) => d.name)

const newSession = (agent: Record<string, unknown>) => newSessionOf(s.client, agent)
const step = (id: string, events: any[], until?: (e: any, all: any[]) => boolean) => stepOf(s.client, id, events, until)

/** The web tool definitions of the first request a new session with `tools` makes. */
async function offered(tools: unknown[]) {
  const session = await newSession({ tools })
  const base = s.model.requests.length
  await step(session.id, [say('hi')])
  return s.model.requests[base]!
}

t.test('enabled web tools are offered as server tools with their settings; disabled ones, and those under always_ask, are not', async (t) => {
  const bare = await offered([{ type: 'agent_toolset_20260401' }])
  t.same(webDefs(bare), [
    { type: 'web_search_20250305', name: 'web_search' },
    { type: 'web_fetch_20250910', name: 'web_fetch' },
  ])
  t.notOk(String(bare.headers['anthropic-beta'] ?? '').includes('web-fetch'), 'no beta header: web fetch is generally available')

  const set = await offered([
    {
      type: 'agent_toolset_20260401',
      configs: [
        {
          name: 'web_search',
          allowed_domains: ['example.com', 'docs.example.org'],
          user_location: { type: 'approximate', city: 'Paris', country: 'FR', timezone: 'Europe/Paris' },
        },
        {
          name: 'web_fetch',
          blocked_domains: ['bad.example'],
          max_content_tokens: 5000,
          url_sources: { user_input: 'all', server_tool_results: { type: 'only', tools: [{ type: 'tool_reference', name: 'web_search' }] } },
        },
      ],
    },
  ])
  t.same(webDefs(set), [
    {
      type: 'web_search_20250305',
      name: 'web_search',
      allowed_domains: ['example.com', 'docs.example.org'],
      user_location: { type: 'approximate', city: 'Paris', country: 'FR', timezone: 'Europe/Paris' },
    },
    {
      type: 'web_fetch_20250910',
      name: 'web_fetch',
      blocked_domains: ['bad.example'],
      max_content_tokens: 5000,
      url_sources: { user_input: { type: 'all' }, server_tool_results: { type: 'only', tools: [{ type: 'tool_reference', name: 'web_search' }] } },
    },
  ])

  // web_search off: web_fetch's sources cannot name it (the API refuses a reference to an undeclared tool).
  const noSearch = await offered([
    {
      type: 'agent_toolset_20260401',
      configs: [
        { name: 'web_search', enabled: false },
        { name: 'web_fetch', url_sources: { server_tool_results: { type: 'only', tools: [{ type: 'tool_reference', name: 'web_search' }] } } },
      ],
    },
  ])
  t.same(webDefs(noSearch), [{ type: 'web_fetch_20250910', name: 'web_fetch', url_sources: { server_tool_results: { type: 'none' } } }])

  const off = await offered([
    {
      type: 'agent_toolset_20260401',
      configs: [
        { name: 'web_search', enabled: false },
        { name: 'web_fetch', permission_policy: { type: 'always_ask' } },
      ],
    },
  ])
  t.same(webDefs(off), [], 'disabled, and always_ask (nothing could be asked before the provider runs it): not offered')
  t.ok(names(off).includes('bash'), 'the other built-ins are')
  t.same(webDefs(await offered([{ type: 'agent_toolset_20260401', default_config: { enabled: false }, configs: [{ name: 'read', enabled: true }] }])), [])
  t.same(webDefs(await offered([{ type: 'agent_toolset_20260401', default_config: { permission_policy: { type: 'auto' } } }])).length, 2, 'auto: offered')

  const custom = await offered([
    { type: 'agent_toolset_20260401' },
    { type: 'custom', name: 'web_search', description: "The agent's own search.", input_schema: { type: 'object' } },
  ])
  t.same(webDefs(custom), [{ type: 'web_fetch_20250910', name: 'web_fetch' }], 'a custom tool of the name keeps it')
  t.equal(names(custom).filter((n) => n === 'web_search').length, 1)

  const none = await offered([{ type: 'custom', name: 'lookup', description: 'A client tool.', input_schema: { type: 'object' } }])
  t.same(webDefs(none), [], 'no agent toolset: no web tools')
})

t.test('a web search: its use and result as events, handed back in the next request, counted in usage and list cost', async (t) => {
  const session = await newSession({ model: 'claude-sonnet-4-5', tools: [{ type: 'agent_toolset_20260401' }] })
  const base = s.model.requests.length
  s.model.enqueue({
    steps: [
      { type: 'text', text: 'Let me search.' },
      { type: 'server_tool_use', name: 'web_search', input: { query: 'troupe nats' }, id: 'srvtoolu_01Search' },
      {
        type: 'web_search_tool_result',
        content: [
          { url: 'https://a.example/1', title: 'One', encrypted_content: 'ENC-ONE', page_age: '2 days ago' },
          { url: 'https://b.example/2', title: 'Two', encrypted_content: 'ENC-TWO' },
        ],
      },
      { type: 'text', text: 'Found two.' },
    ],
    usage: { input_tokens: 10, output_tokens: 20, server_tool_use: { web_search_requests: 3 } },
  })
  const events = await step(session.id, [say('search it')])
  t.same(
    events.map((e) => e.type),
    [
      'user.message',
      'session.status_running',
      'span.model_request_start',
      'agent.message',
      'agent.tool_use',
      'agent.tool_result',
      'agent.message',
      'span.model_request_end',
      'session.status_idle',
    ],
  )
  const [use] = of(events, 'agent.tool_use')
  const [result] = of(events, 'agent.tool_result')
  t.match(use, {
    name: 'web_search',
    input: { query: 'troupe nats' },
    evaluated_permission: 'allow',
    evaluation: { type: 'always_allow' },
    server_tool_use_id: 'srvtoolu_01Search',
  })
  const rawResults = [
    { type: 'web_search_result', url: 'https://a.example/1', title: 'One', encrypted_content: 'ENC-ONE', page_age: '2 days ago' },
    { type: 'web_search_result', url: 'https://b.example/2', title: 'Two', encrypted_content: 'ENC-TWO', page_age: null },
  ]
  t.same(result.content, [
    {
      type: 'search_result',
      source: 'https://a.example/1',
      title: 'One',
      content: [{ type: 'text', text: 'Page age: 2 days ago' }],
      citations: { enabled: false },
    },
    { type: 'search_result', source: 'https://b.example/2', title: 'Two', content: [], citations: { enabled: false } },
  ])
  t.equal(result.tool_use_id, use.id)
  t.notOk(result.is_error)
  t.same(result.server_tool_result, { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_01Search', content: rawResults })
  t.match(of(events, 'span.model_request_end')[0].model_usage, { server_tool_use: { web_search_requests: 3, web_fetch_requests: 0 } })
  t.match(of(events, 'session.status_idle')[0].stop_reason, { type: 'end_turn' })
  t.equal(s.model.requests.length, base + 1, 'nothing waits on the use: one request')

  // The next request hands the response back as it came.
  s.model.enqueue({ steps: [{ type: 'text', text: 'again' }] })
  await step(session.id, [say('and now?')])
  const messages = s.model.requests[base + 1]!.body.messages
  t.same(messages.at(-2), {
    role: 'assistant',
    content: [
      { type: 'text', text: 'Let me search.' },
      { type: 'server_tool_use', id: 'srvtoolu_01Search', name: 'web_search', input: { query: 'troupe nats' } },
      { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_01Search', content: rawResults },
      { type: 'text', text: 'Found two.' },
    ],
  })
  t.same(messages.at(-1), { role: 'user', content: [{ type: 'text', text: 'and now?' }] })

  // Three searches at USD 10 per 1,000: 3 cents; the tokens (about 0.05 cents) and seconds of runtime round away.
  const got = await s.client.beta.sessions.retrieve(session.id)
  t.same((got.usage as any).server_tool_use, { web_search_requests: 3, web_fetch_requests: 0 })
  t.same((got.usage as any).list_cost, { amount: '3', currency: 'USD' })

  // What the client lists is what was streamed.
  const listed = await history(s.client, session.id)
  t.same(
    of(listed, 'agent.tool_result').find((e) => e.id === result.id),
    result,
  )
})

t.test('a web fetch: the page as a document, a failed fetch an error result, fetches counted without a charge', async (t) => {
  const session = await newSession({ model: 'claude-sonnet-4-5', tools: [{ type: 'agent_toolset_20260401' }] })
  const base = s.model.requests.length
  s.model.enqueue({
    steps: [
      { type: 'server_tool_use', name: 'web_fetch', input: { url: 'https://a.example/page' } },
      { type: 'web_fetch_tool_result', content: { url: 'https://a.example/page', text: 'Hello page', title: 'Page', retrieved_at: '2026-11-29T00:00:00Z' } },
      { type: 'server_tool_use', name: 'web_fetch', input: { url: 'https://nope.example/' } },
      { type: 'web_fetch_tool_result', content: { error_code: 'url_not_accessible' } },
      { type: 'text', text: 'One worked.' },
    ],
    usage: { input_tokens: 10, output_tokens: 5, server_tool_use: { web_fetch_requests: 2 } },
  })
  const events = await step(session.id, [say('fetch them')])
  const uses = of(events, 'agent.tool_use')
  const results = of(events, 'agent.tool_result')
  t.equal(uses.length, 2)
  t.match(uses[0], { name: 'web_fetch', input: { url: 'https://a.example/page' } })
  t.same(results[0].content, [
    { type: 'document', source: { type: 'text', data: 'Hello page', media_type: 'text/plain' }, title: 'Page', context: 'https://a.example/page' },
  ])
  t.equal(results[0].tool_use_id, uses[0].id)
  t.notOk(results[0].is_error)
  t.match(results[1], { tool_use_id: uses[1].id, is_error: true, content: [{ type: 'text', text: 'web_fetch failed: url_not_accessible' }] })

  s.model.enqueue({ steps: [{ type: 'text', text: 'ok' }] })
  await step(session.id, [say('next')])
  const assistant = s.model.requests[base + 1]!.body.messages.at(-2)
  t.same(
    assistant.content.map((b: any) => b.type),
    ['server_tool_use', 'web_fetch_tool_result', 'server_tool_use', 'web_fetch_tool_result', 'text'],
  )
  t.match(assistant.content[1], {
    tool_use_id: assistant.content[0].id,
    content: { type: 'web_fetch_result', url: 'https://a.example/page', content: { type: 'document', source: { data: 'Hello page' } } },
  })
  t.same(assistant.content[3].content, { type: 'web_fetch_tool_result_error', error_code: 'url_not_accessible' })

  const got = await s.client.beta.sessions.retrieve(session.id)
  t.same((got.usage as any).server_tool_use, { web_search_requests: 0, web_fetch_requests: 2 })
  t.same((got.usage as any).list_cost, { amount: '0', currency: 'USD' }, 'web fetch has no per-request charge')
})

t.test('a long fetched page: the event shows its first 200,000 characters, the conversation hands it back whole', async (t) => {
  const session = await newSession({ tools: [{ type: 'agent_toolset_20260401' }] })
  const base = s.model.requests.length
  const page = 'x'.repeat(250_000)
  s.model.enqueue({
    steps: [
      { type: 'server_tool_use', name: 'web_fetch', input: { url: 'https://a.example/long' } },
      { type: 'web_fetch_tool_result', content: { url: 'https://a.example/long', text: page } },
      { type: 'text', text: 'long' },
    ],
  })
  const events = await step(session.id, [say('fetch')])
  const [result] = of(events, 'agent.tool_result')
  const shown: string = result.content[0].source.data
  t.equal(shown.slice(0, 200_000), page.slice(0, 200_000))
  t.match(shown.slice(200_000), /^\n\[cut here: the page has 250000 characters; the model read it whole\]$/)
  t.equal(result.server_tool_result.content.content.source.data.length, 250_000)
  s.model.enqueue({ steps: [{ type: 'text', text: 'ok' }] })
  await step(session.id, [say('next')])
  t.equal(s.model.requests[base + 1]!.body.messages.at(-2).content[1].content.content.source.data, page)
})

t.test('pause_turn: the model continues its paused response in a second request', async (t) => {
  const session = await newSession({ tools: [{ type: 'agent_toolset_20260401' }] })
  const base = s.model.requests.length
  s.model.enqueue(
    {
      steps: [
        { type: 'server_tool_use', name: 'web_search', input: { query: 'long' }, id: 'srvtoolu_01Paused' },
        { type: 'web_search_tool_result', content: [{ url: 'https://c.example/', title: 'C' }] },
      ],
      stop_reason: 'pause_turn',
    },
    { steps: [{ type: 'text', text: 'continued' }] },
  )
  const events = await step(session.id, [say('go')])
  t.equal(of(events, 'span.model_request_start').length, 2)
  t.match(of(events, 'agent.message')[0], { content: [{ type: 'text', text: 'continued' }] })
  t.match(of(events, 'session.status_idle')[0].stop_reason, { type: 'end_turn' })
  const second = s.model.requests[base + 1]!.body.messages
  t.match(second.at(-1), {
    role: 'assistant',
    content: [
      { type: 'server_tool_use', id: 'srvtoolu_01Paused' },
      { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_01Paused' },
    ],
  })
})

t.test('an endpoint that refuses a web tool: a session.error naming it, and the turn goes on without it', async (t) => {
  t.teardown(() => s.model.refuseServerTools(undefined))
  const session = await newSession({ tools: [{ type: 'agent_toolset_20260401' }] })
  s.model.refuseServerTools(['web_fetch_20250910'])
  const base = s.model.requests.length
  s.model.enqueue({ steps: [{ type: 'text', text: 'fine without' }] })
  const events = await step(session.id, [say('hi')])
  t.same(
    events.map((e) => e.type),
    [
      'user.message',
      'session.status_running',
      'span.model_request_start',
      'span.model_request_end',
      'session.error',
      'span.model_request_start',
      'agent.message',
      'span.model_request_end',
      'session.status_idle',
    ],
  )
  const [error] = of(events, 'session.error')
  t.match(error.error, { type: 'model_request_failed_error', retry_status: { type: 'retrying' } })
  t.match(error.error.message, /refused the web tool web_fetch \(web_fetch_20250910\)/)
  t.match(error.error.message, /answered 400 invalid_request_error/, 'the endpoint’s answer is in the message')
  t.equal(of(events, 'span.model_request_end')[0].is_error, true)
  t.match(of(events, 'session.status_idle')[0].stop_reason, { type: 'end_turn' })
  t.same(
    webDefs(s.model.requests[base]!).map((d: any) => d.name),
    ['web_search', 'web_fetch'],
  )
  t.same(
    webDefs(s.model.requests[base + 1]!).map((d: any) => d.name),
    ['web_search'],
    'the retry goes without web_fetch only',
  )

  // Refusing both: one error each, then a request without either; the next turn offers them again.
  s.model.refuseServerTools(['web_search_20250305', 'web_fetch_20250910'])
  const next = s.model.requests.length
  const again = await step(session.id, [say('again')])
  t.same(
    of(again, 'session.error').map((e) => /refused the web tool (\w+)/.exec(e.error.message)?.[1]),
    ['web_search', 'web_fetch'],
  )
  t.same(webDefs(s.model.requests[next]!).length, 2, 'a new turn offers both again')
  t.same(webDefs(s.model.requests[next + 2]!), [])
  t.match(of(again, 'session.status_idle')[0].stop_reason, { type: 'end_turn' })
})
