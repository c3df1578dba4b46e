// Drives the fake with the official client, so a drift between the fake's wire format and what
// @anthropic-ai/sdk parses shows up here rather than as a puzzling failure in a Troupe test.
import t, { type Test } from 'tap'
import Anthropic, {
  APIError,
  APIUserAbortError,
  AnthropicError,
  BadRequestError,
  InternalServerError,
  OverloadedError,
  RateLimitError,
} from '@anthropic-ai/sdk'
import { startFakeModelServer } from '../fakes/model-server.js'

const MODEL = 'claude-test-model'
const API_KEY = 'sk-test-fake'

const params = (extra: Record<string, unknown> = {}) => ({
  model: MODEL,
  max_tokens: 1024,
  messages: [{ role: 'user' as const, content: 'hi' }],
  ...extra,
})

async function setup(t: Test, clientOpts: Record<string, unknown> = {}) {
  const server = await startFakeModelServer()
  t.teardown(() => server.close())
  const client = new Anthropic({ baseURL: server.url, apiKey: API_KEY, ...clientOpts })
  return { server, client }
}

/** Settles a promise into its rejection reason, or fails when it resolves. */
async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    (v) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(v)}`)
    },
    (e: unknown) => e,
  )
}

t.test('streams text that accumulates to the scripted text', async (t) => {
  const { server, client } = await setup(t)
  const text = 'Hello, world! This is streamed — with ✨ non-ASCII.'
  server.enqueue({ steps: [{ type: 'text', text, chunks: 4 }] })

  const deltas: string[] = []
  const stream = client.messages.stream(params())
  stream.on('text', (d) => deltas.push(d))
  const msg = await stream.finalMessage()

  t.equal(deltas.length, 4)
  t.equal(deltas.join(''), text)
  t.equal(await stream.finalText(), text)
  t.match(msg.id, /^msg_/)
  t.equal(msg.type, 'message')
  t.equal(msg.role, 'assistant')
  t.equal(msg.model, MODEL)
  t.equal(msg.stop_reason, 'end_turn')
  t.equal(msg.stop_sequence, null)
  t.same(msg.content, [{ type: 'text', text, citations: null }])
  t.match(stream.request_id, /^req_/)
})

t.test('wire format: SSE events, pings, headers', async (t) => {
  const { server } = await setup(t)
  server.enqueue({
    steps: [
      { type: 'text', text: 'abc' },
      { type: 'tool_use', name: 'f', input: { a: 1 } },
    ],
  })
  const res = await fetch(`${server.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': API_KEY },
    body: JSON.stringify(params({ stream: true })),
  })
  t.equal(res.status, 200)
  t.match(res.headers.get('content-type'), /^text\/event-stream/)
  t.match(res.headers.get('request-id'), /^req_/)
  const body = await res.text()
  const frames = body.split('\n\n').filter(Boolean)
  const names = frames.map((f) => /^event: (.*)$/m.exec(f)?.[1])
  t.same(names, [
    'message_start',
    'ping',
    'content_block_start',
    'content_block_delta',
    'content_block_delta',
    'content_block_delta',
    'content_block_stop',
    'ping',
    'content_block_start',
    'content_block_delta', // the API's opening empty partial_json
    'content_block_delta',
    'content_block_delta',
    'content_block_delta',
    'content_block_stop',
    'message_delta',
    'message_stop',
  ])
  for (const f of frames) {
    const data = JSON.parse(/^data: (.*)$/m.exec(f)![1]!)
    t.equal(data.type, /^event: (.*)$/m.exec(f)![1], 'data.type matches the event name')
  }
  const start = JSON.parse(/^data: (.*)$/m.exec(frames[0]!)![1]!).message
  t.match(start, {
    type: 'message',
    role: 'assistant',
    model: MODEL,
    content: [],
    stop_reason: null,
    usage: { input_tokens: 10, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
  })
  t.match(start.id, /^msg_01/)
  const delta = JSON.parse(/^data: (.*)$/m.exec(frames.at(-2)!)![1]!)
  t.match(delta, { delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: Number } })
})

t.test('create({stream: true}) yields the raw events in order', async (t) => {
  const { server, client } = await setup(t)
  server.enqueue({ steps: [{ type: 'text', text: 'xy', chunks: 2 }] })
  const stream = await client.messages.create({ ...params(), stream: true })
  const types: string[] = []
  let text = ''
  for await (const ev of stream) {
    types.push(ev.type)
    if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') text += ev.delta.text
  }
  t.same(types, ['message_start', 'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop'])
  t.equal(text, 'xy')
})

t.test('thinking block with signature', async (t) => {
  const { server, client } = await setup(t)
  server.enqueue({
    steps: [
      { type: 'thinking', thinking: 'Let me think about this carefully.', signature: 'sig-abc' },
      { type: 'thinking', thinking: 'Second thought.' },
      { type: 'text', text: 'Answer.' },
    ],
  })
  const signatures: string[] = []
  const stream = client.messages.stream(params({ thinking: { type: 'enabled', budget_tokens: 1024 } }))
  stream.on('signature', (s) => signatures.push(s))
  const msg = await stream.finalMessage()
  t.same(msg.content[0], { type: 'thinking', thinking: 'Let me think about this carefully.', signature: 'sig-abc' })
  t.equal(msg.content[1]!.type, 'thinking')
  if (msg.content[1]!.type === 'thinking') {
    t.equal(msg.content[1]!.thinking, 'Second thought.')
    t.ok(msg.content[1]!.signature.length > 0, 'a signature is generated by default')
  }
  t.same(msg.content[2], { type: 'text', text: 'Answer.', citations: null })
  t.equal(signatures.length, 2)
  t.equal(signatures[0], 'sig-abc')
})

t.test('tool_use input is parsed, ids default to toolu_, stop_reason defaults to tool_use', async (t) => {
  const { server, client } = await setup(t)
  const input = { path: '/tmp/ä ✨.txt', lines: [1, 2, 3], opts: { recursive: true, depth: null } }
  server.enqueue({
    steps: [
      { type: 'text', text: 'Calling tools.' },
      { type: 'tool_use', name: 'read_file', input },
      { type: 'tool_use', name: 'noop', input: {}, id: 'toolu_fixed' },
    ],
  })
  const jsonDeltas: string[] = []
  const stream = client.messages.stream(params())
  stream.on('inputJson', (d) => jsonDeltas.push(d))
  const msg = await stream.finalMessage()
  t.equal(msg.stop_reason, 'tool_use')
  const [, a, b] = msg.content
  t.match(a, { type: 'tool_use', name: 'read_file', caller: { type: 'direct' } })
  if (a?.type === 'tool_use') {
    t.same(a.input, input)
    t.match(a.id, /^toolu_01/)
  }
  t.match(b, { type: 'tool_use', name: 'noop', id: 'toolu_fixed' })
  if (b?.type === 'tool_use') t.same(b.input, {})
  t.ok(jsonDeltas.length > 3, 'input JSON arrives in several pieces')
  t.equal(jsonDeltas.join(''), `${JSON.stringify(input)}{}`)
})

t.test('usage numbers surface in finalMessage().usage', async (t) => {
  const { server, client } = await setup(t)
  const usage = {
    input_tokens: 123,
    output_tokens: 45,
    cache_read_input_tokens: 6,
    cache_creation_input_tokens: 7,
    cache_creation: { ephemeral_5m_input_tokens: 3, ephemeral_1h_input_tokens: 4 },
    server_tool_use: { web_search_requests: 2 },
  }
  server.enqueue({ usage }, { usage })
  const msg = await client.messages.stream(params()).finalMessage()
  t.match(msg.usage, {
    ...usage,
    server_tool_use: { web_search_requests: 2, web_fetch_requests: 0 },
    service_tier: 'standard',
  })
  const nonStreaming = await client.messages.create(params())
  t.same(nonStreaming.usage, msg.usage, 'streamed and non-streamed usage agree')

  server.enqueue({ steps: [{ type: 'text', text: 'x'.repeat(40) }] })
  const defaults = await client.messages.stream(params()).finalMessage()
  t.match(defaults.usage, {
    input_tokens: 10,
    output_tokens: 10,
    cache_read_input_tokens: 0,
    cache_creation_input_tokens: 0,
    cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
    server_tool_use: null,
  })
})

t.test('non-streaming create gets the full Message JSON', async (t) => {
  const { server, client } = await setup(t)
  server.enqueue({
    steps: [
      { type: 'text', text: 'full' },
      { type: 'tool_use', name: 't', input: { q: 1 }, id: 'toolu_x' },
    ],
    stop_reason: 'max_tokens',
  })
  const { data: msg, response } = await client.messages.create(params()).withResponse()
  t.equal(response.headers.get('content-type'), 'application/json')
  t.match(response.headers.get('request-id'), /^req_/)
  t.match(msg, {
    type: 'message',
    role: 'assistant',
    model: MODEL,
    stop_reason: 'max_tokens',
    content: [
      { type: 'text', text: 'full' },
      { type: 'tool_use', id: 'toolu_x', name: 't', input: { q: 1 } },
    ],
  })
  t.notOk(server.requests[0]!.body.stream)
})

t.test('refusal stop reason carries stop_details', async (t) => {
  const { server, client } = await setup(t)
  server.enqueue({ stop_reason: 'refusal', steps: [{ type: 'text', text: 'no' }] })
  const msg = await client.messages.stream(params()).finalMessage()
  t.equal(msg.stop_reason, 'refusal')
  t.match(msg.stop_details, { type: 'refusal' })
})

t.test('HTTP errors map to SDK error classes and are not retried by the client', async (t) => {
  // Default client: maxRetries 2, which would retry 429/5xx if the fake allowed it.
  const { server, client } = await setup(t)
  const cases = [
    { status: 529, type: 'overloaded_error', cls: OverloadedError },
    { status: 429, type: 'rate_limit_error', cls: RateLimitError },
    { status: 500, type: 'api_error', cls: InternalServerError },
    { status: 400, type: 'invalid_request_error', cls: BadRequestError },
  ] as const
  for (const c of cases) {
    const before = server.requests.length
    server.enqueue({ error: { status: c.status, type: c.type, message: `boom ${c.status}` } })
    const err = await rejection(client.messages.stream(params()).finalMessage())
    t.ok(err instanceof c.cls, `${c.status} -> ${c.cls.name}`)
    if (err instanceof APIError) {
      t.equal(err.status, c.status)
      t.equal(err.type, c.type)
      t.equal(err.apiMessage, `boom ${c.status}`)
      t.match(err.requestID, /^req_/)
      t.equal(err.headers?.get('x-should-retry'), 'false')
    }
    t.equal(server.requests.length, before + 1, `${c.status} was sent once`)
  }
  t.ok(new OverloadedError(529, {}, undefined, new Headers()) instanceof InternalServerError)

  server.enqueue({ error: { status: 529, type: 'overloaded_error' } })
  const nonStreaming = await rejection(client.messages.create(params()))
  t.ok(nonStreaming instanceof OverloadedError)
  if (nonStreaming instanceof APIError) t.equal(nonStreaming.apiMessage, 'Overloaded')
})

t.test('clientRetries lets the SDK retry by itself', async (t) => {
  const { server, client } = await setup(t)
  server.enqueue({ error: { status: 529, type: 'overloaded_error', clientRetries: true } }, { steps: [{ type: 'text', text: 'after retry' }] })
  const msg = await client.messages.stream(params()).finalMessage()
  t.same(msg.content, [{ type: 'text', text: 'after retry', citations: null }])
  t.equal(server.requests.length, 2)
  t.equal(server.requests[0]!.headers['x-stainless-retry-count'], '0')
  t.equal(server.requests[1]!.headers['x-stainless-retry-count'], '1')
})

t.test('error headers', async (t) => {
  const { server } = await setup(t)
  const post = () =>
    fetch(`${server.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': API_KEY },
      body: JSON.stringify(params({ stream: true })),
    })
  server.enqueue(
    { error: { status: 429, type: 'rate_limit_error' } },
    { error: { status: 429, type: 'rate_limit_error', retryAfterMs: 2500 }, headers: { 'x-extra': 'yes' } },
    { error: { status: 404, type: 'not_found_error', details: { error_code: 'whatever' } } },
  )
  const r1 = await post()
  t.equal(r1.status, 429)
  t.equal(r1.headers.get('content-type'), 'application/json')
  t.equal(r1.headers.get('x-should-retry'), 'false')
  t.equal(r1.headers.get('retry-after-ms'), '0')
  t.equal(r1.headers.get('retry-after'), '0')
  t.match(await r1.json(), { type: 'error', error: { type: 'rate_limit_error', message: String } })
  const r2 = await post()
  t.equal(r2.headers.get('retry-after-ms'), '2500')
  t.equal(r2.headers.get('retry-after'), '3')
  t.equal(r2.headers.get('x-extra'), 'yes')
  await r2.text()
  const r3 = await post()
  t.equal(r3.headers.get('retry-after-ms'), null, 'no retry hint on a non-retryable status')
  t.match(await r3.json(), { error: { type: 'not_found_error', details: { error_code: 'whatever' } } })
})

t.test('mid-stream error event surfaces as an APIError', async (t) => {
  const { server, client } = await setup(t)
  server.enqueue({ steps: [{ type: 'text', text: 'partial' }], streamError: { type: 'overloaded_error' } })
  const texts: string[] = []
  const stream = client.messages.stream(params())
  stream.on('text', (d) => texts.push(d))
  const err = await rejection(stream.finalMessage())
  t.ok(err instanceof APIError)
  if (err instanceof APIError) {
    t.equal(err.type, 'overloaded_error')
    t.equal(err.status, undefined)
  }
  t.equal(texts.join(''), 'partial')
  t.equal(server.requests.length, 1, 'mid-stream errors are never retried by the SDK')
})

t.test('dropAfterEvents cuts the connection mid-stream', async (t) => {
  const { server, client } = await setup(t)
  server.enqueue({ steps: [{ type: 'text', text: 'abcdef' }], dropAfterEvents: 4 })
  const err = await rejection(client.messages.stream(params()).finalMessage())
  t.ok(err instanceof AnthropicError, `got ${String(err)}`)
  t.equal(server.aborted, 0, 'a server-side drop is not a client abort')
  t.equal(server.requests.length, 1)
})

t.test('hang + abort increments aborted', async (t) => {
  const { server, client } = await setup(t)
  server.enqueue({ hang: true })
  const ac = new AbortController()
  const stream = client.messages.stream(params(), { signal: ac.signal })
  const started = new Promise<string>((resolve) => stream.on('streamEvent', (ev) => resolve(ev.type)))
  t.equal(await started, 'message_start')
  t.equal(server.aborted, 0)
  ac.abort()
  const err = await rejection(stream.done())
  t.ok(err instanceof APIUserAbortError)
  await server.waitForAborted(1)
  t.equal(server.aborted, 1)

  // Stall right after the first text delta (message_start, ping, content_block_start, delta).
  server.enqueue({ steps: [{ type: 'text', text: 'one two three', chunks: 3 }], stallAfterEvents: 4 })
  const partial = client.messages.stream(params())
  const seen: string[] = []
  partial.on('text', (_delta, snapshot) => {
    seen.push(snapshot)
    partial.abort()
  })
  t.ok((await rejection(partial.done())) instanceof APIUserAbortError)
  t.same(seen, ['one t'], 'exactly the first of three deltas arrived')
  await server.waitForAborted(2)

  // A long chunk delay stands in for a slow model; the pause ends as soon as the client leaves.
  server.enqueue({ steps: [{ type: 'text', text: 'slow' }], chunkDelayMs: 60_000 })
  const slow = client.messages.stream(params())
  slow.on('streamEvent', (ev) => ev.type === 'message_start' && slow.abort())
  t.ok((await rejection(slow.done())) instanceof APIUserAbortError)
  await server.waitForAborted(3)

  // Non-streaming: headers, then nothing.
  server.enqueue({ hang: true })
  const ac2 = new AbortController()
  const pending = client.messages.create(params(), { signal: ac2.signal })
  await server.waitForRequests(4)
  ac2.abort()
  t.ok((await rejection(pending)) instanceof APIUserAbortError)
  await server.waitForAborted(4)

  // delayMs: the client can give up before headers are sent.
  server.enqueue({ delayMs: 60_000 })
  const ac3 = new AbortController()
  const delayed = client.messages.stream(params(), { signal: ac3.signal })
  await server.waitForRequests(5)
  ac3.abort()
  t.ok((await rejection(delayed.done())) instanceof APIUserAbortError)
  await server.waitForAborted(5)
  t.equal(server.aborted, 5)
})

t.test('completed replies are not counted as aborted', async (t) => {
  const { server, client } = await setup(t)
  await client.messages.stream(params()).finalMessage()
  await client.messages.create(params())
  server.enqueue({ error: { status: 500, type: 'api_error' } })
  await rejection(client.messages.create(params()))
  t.equal(server.aborted, 0)
})

t.test('close() cuts a hanging reply without counting it as aborted', async (t) => {
  const server = await startFakeModelServer()
  const client = new Anthropic({ baseURL: server.url, apiKey: API_KEY, maxRetries: 0 })
  server.enqueue({ hang: true })
  const stream = client.messages.stream(params())
  const connected = new Promise<void>((resolve) => stream.on('connect', () => resolve()))
  const done = rejection(stream.done())
  await connected
  await server.close()
  t.ok((await done) instanceof AnthropicError)
  t.equal(server.aborted, 0)
})

t.test('queue order, handler precedence, fallback', async (t) => {
  const { server, client } = await setup(t)
  const say = (text: string) => ({ steps: [{ type: 'text' as const, text }] })
  const ask = async (system?: string) =>
    (await client.messages.stream(params(system ? { system } : {})).finalMessage()).content.map((b) => (b.type === 'text' ? b.text : '')).join('')

  t.equal(await ask(), 'ok', 'default fallback')
  server.enqueue(say('first'), say('second'))
  t.equal(server.queued, 2)
  server.setHandler((req) => (req.body.system === 'special' ? say('from handler') : undefined))
  t.equal(await ask('special'), 'from handler')
  t.equal(server.queued, 2, 'a handler reply leaves the queue alone')
  t.equal(await ask(), 'first')
  t.equal(await ask(), 'second')
  t.equal(await ask(), 'ok')
  server.setFallback(say('fallback'))
  t.equal(await ask(), 'fallback')
  t.equal(await ask(), 'fallback')
  server.setHandler(undefined)
  t.equal(await ask('special'), 'fallback')
})

t.test('records requests', async (t) => {
  const { server, client } = await setup(t)
  const tools = [
    {
      name: 'get_weather',
      description: 'Weather',
      input_schema: { type: 'object' as const, properties: { city: { type: 'string' } } },
    },
  ]
  const before = Date.now()
  await client.messages.stream(params({ system: [{ type: 'text', text: 'You are a test.' }], tools })).finalMessage()
  await client.messages.create(params({ system: 'plain' }), { headers: { 'x-custom': 'c1' } })
  t.equal(server.requests.length, 2)
  const [a, b] = server.requests
  t.equal(a!.method, 'POST')
  t.equal(a!.path, '/v1/messages')
  // SDK 1.x sends `apiKey` as a bearer token, not as x-api-key.
  t.equal(a!.headers.authorization, `Bearer ${API_KEY}`)
  t.type(a!.headers['anthropic-version'], 'string')
  t.match(a!.headers['content-type'], /^application\/json/)
  t.ok(a!.at >= before && b!.at >= a!.at)
  t.match(a!.body, {
    model: MODEL,
    max_tokens: 1024,
    stream: true,
    system: [{ type: 'text', text: 'You are a test.' }],
    tools,
    messages: [{ role: 'user', content: 'hi' }],
  })
  t.equal(b!.body.system, 'plain')
  t.equal(b!.headers['x-custom'], 'c1')
})

t.test('waitForRequests', async (t) => {
  const { server, client } = await setup(t)
  server.enqueue({ delayMs: 60_000 })
  const ac = new AbortController()
  const p = rejection(client.messages.create(params(), { signal: ac.signal }))
  await server.waitForRequests(1)
  t.equal(server.requests.length, 1)
  await t.rejects(server.waitForRequests(2, 20), /timed out after 20 ms waiting for 2 requests \(got 1\)/)
  ac.abort()
  await p
})

t.test('rejects what the real API would', async (t) => {
  const { server, client } = await setup(t)
  server.enqueue({ steps: [{ type: 'text', text: 'must stay queued' }] })
  const err = await rejection(client.messages.create({ model: MODEL, messages: [] } as never))
  t.ok(err instanceof BadRequestError)
  t.match(String(err), /max_tokens/)
  t.equal(server.queued, 1, 'an invalid request does not consume a scripted reply')

  const noKey = await fetch(`${server.url}/v1/messages`, { method: 'POST', body: JSON.stringify(params()) })
  t.equal(noKey.status, 401)
  await noKey.text()
  const notFound = await fetch(`${server.url}/v1/complete`, { method: 'POST', headers: { 'x-api-key': 'k' } })
  t.equal(notFound.status, 404)
  t.match(await notFound.json(), { type: 'error', error: { type: 'not_found_error' } })
  t.equal(server.requests.length, 3, 'every request is recorded, valid or not')
})
