import t, { type Test } from 'tap'
import { APIError } from '@anthropic-ai/sdk'
import { raw } from '../helpers/troupe.js'
import { agentAndEnv, collect, isIdle, sessionStack } from './_helpers.js'

// Session events end to end (WIRE.md §7, DECISIONS.md "Sessions and events"): sending, the history list,
// and the SSE tail with its framing, previews (event_deltas[]) and replay (?after= / Last-Event-ID).

const s = await sessionStack({ TROUPE_SSE_KEEPALIVE_MS: '500' })
const { agent, env } = await agentAndEnv(s.client)

const text = (t: string) => ({ type: 'user.message', content: [{ type: 'text', text: t }] })
const newSession = () => s.client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
const send = (id: string, ...events: any[]) => s.client.beta.sessions.events.send(id, { events } as any)
const listAll = async (id: string, q: Record<string, unknown> = {}) =>
  (await s.client.beta.sessions.events.list(id, { limit: 1000, ...q } as any)).data as any[]

/** Runs one turn: opens a stream first, sends the message, returns the streamed events through idle. */
async function turn(id: string, msg: string) {
  const stream = await s.client.beta.sessions.events.stream(id)
  await send(id, text(msg))
  return collect(stream, isIdle)
}

/** Expects the promise to fail with a 400 invalid_request_error whose message names `field`. */
async function expect400(t: Test, p: Promise<unknown>, field: string) {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  )
  t.type(err, APIError, 'the request failed')
  const e = err as APIError
  t.equal(e.status, 400)
  t.equal((e.error as any)?.error?.type, 'invalid_request_error')
  t.match((e.error as any)?.error?.message, field, `the message names ${field}`)
}

/** A raw SSE reader: the text exactly as the server framed it. */
async function rawStream(path: string, headers: Record<string, string> = {}) {
  const ac = new AbortController()
  const res = await fetch(s.url + path, { headers, signal: ac.signal })
  let body = ''
  let ended = false
  const waiters = new Set<() => void>()
  const pump = (async () => {
    const reader = res.body!.getReader()
    const dec = new TextDecoder()
    for (;;) {
      const { value, done } = await reader.read()
      if (done) break
      body += dec.decode(value, { stream: true })
      for (const w of [...waiters]) w()
    }
  })()
    .catch(() => undefined)
    .finally(() => {
      ended = true
      for (const w of [...waiters]) w()
    })
  return {
    res,
    get text() {
      return body
    },
    /** Waits until `cond(text)` holds; fails after `ms`. */
    until(cond: (text: string) => boolean, ms = 10_000): Promise<void> {
      if (cond(body)) return Promise.resolve()
      return new Promise((resolve, reject) => {
        const check = () => {
          if (cond(body)) {
            waiters.delete(check)
            clearTimeout(timer)
            resolve()
          } else if (ended) {
            waiters.delete(check)
            clearTimeout(timer)
            reject(new Error(`stream ended before the condition held:\n${body}`))
          }
        }
        const timer = setTimeout(() => {
          waiters.delete(check)
          reject(new Error(`timed out after ${ms} ms; stream so far:\n${body}`))
        }, ms)
        waiters.add(check)
      })
    },
    async close() {
      ac.abort()
      await pump
    },
  }
}

/** Complete SSE messages (blank-line terminated) of a raw stream's text. */
const messages = (text: string) => text.split('\n\n').slice(0, -1)
const idleFramed = (text: string) => /event: session\.status_idle\nid: [^\n]+\ndata: [^\n]*\n\n/.test(text)

// A quiet stream, opened first; the last test checks it got keepalive comments (every 500 ms here).
const keepaliveSession = await newSession()
const keepalive = await rawStream(`/v1/sessions/${keepaliveSession.id}/events/stream`)
t.teardown(() => keepalive.close())

// ------------------------------------------------------------------------------------------------ sending

t.test('POST events answers {data} with sevt_ ids and processed_at null', async (t) => {
  const session = await newSession()
  const stream = await s.client.beta.sessions.events.stream(session.id)
  const sent = await send(session.id, text('one'), text('two'))
  t.equal(sent.data!.length, 2)
  for (const [i, e] of sent.data!.entries()) {
    t.match(e.id, /^sevt_[0-9A-Z]{26}$/, `event ${i} has a sevt_ id`)
    t.equal(e.processed_at, null, `event ${i} is not processed yet`)
    t.equal(e.type, 'user.message')
  }
  t.same((sent.data![0] as any).content, [{ type: 'text', text: 'one' }])
  t.not(sent.data![0]!.id, sent.data![1]!.id)
  await collect(stream, (_e, all) => all.filter(isIdle).length === 2)
})

t.test('an accepted event is durable before the POST answers', async (t) => {
  const session = await newSession()
  // The model never answers, so nothing but the POST itself can have stored the event.
  s.model.enqueue({ hang: true })
  const aborted = s.model.aborted
  const stream = await s.client.beta.sessions.events.stream(session.id)
  const sent = await send(session.id, text('keep me'))
  const list = await listAll(session.id)
  t.ok(
    list.some((e) => e.id === sent.data![0]!.id),
    'the list right after the POST shows the event',
  )
  t.same(list.find((e) => e.id === sent.data![0]!.id)?.content, [{ type: 'text', text: 'keep me' }])
  await send(session.id, { type: 'user.interrupt' })
  await s.model.waitForAborted(aborted + 1)
  await collect(stream, isIdle)
})

t.test('an event waiting in the mailbox lists with processed_at null, then gets its processed_at', async (t) => {
  const session = await newSession()
  const requests = s.model.requests.length
  s.model.enqueue({ hang: true })
  const aborted = s.model.aborted
  const stream = await s.client.beta.sessions.events.stream(session.id)
  await send(session.id, text('first'))
  await s.model.waitForRequests(requests + 1)
  // The first turn hangs in its model request: the second message cannot have been processed.
  const sent = await send(session.id, text('second'))
  const waiting = (await listAll(session.id)).find((e) => e.id === sent.data![0]!.id)
  t.equal(waiting?.processed_at, null)
  await send(session.id, { type: 'user.interrupt' })
  await s.model.waitForAborted(aborted + 1)
  await collect(stream, isIdle)
  const done = (await listAll(session.id)).find((e) => e.id === sent.data![0]!.id)
  t.match(done?.processed_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, 'processed once the interrupt handled it')
})

t.test('bad events are refused with a 400 naming the field, and nothing is stored', async (t) => {
  const session = await newSession()
  const before = await listAll(session.id)
  await t.test('empty content', (t) => expect400(t, send(session.id, { type: 'user.message', content: [] }), 'events[0].content'))
  await t.test('unknown type', async (t) => {
    const r = await raw(s.url, 'POST', `/v1/sessions/${session.id}/events`, { events: [text('ok'), { type: 'user.shout', content: [] }] })
    t.equal(r.status, 400)
    t.equal(r.json?.error?.type, 'invalid_request_error')
    t.match(r.json?.error?.message, 'events[1].type')
    t.match(r.json?.error?.message, 'user.message', 'the message lists the allowed types')
  })
  await t.test('system.message not last', (t) =>
    expect400(t, send(session.id, text('a'), { type: 'system.message', content: [{ type: 'text', text: 'note' }] }, text('b')), 'events[1]'),
  )
  await t.test('custom tool result for an unknown tool use id', (t) =>
    expect400(
      t,
      send(session.id, { type: 'user.custom_tool_result', custom_tool_use_id: 'sevt_01HZZZZZZZZZZZZZZZZZZZZZZZ', content: [] }),
      'events[0].custom_tool_use_id',
    ),
  )
  await t.test('tool confirmation for an unknown tool use id', (t) =>
    expect400(
      t,
      send(session.id, text('fine'), { type: 'user.tool_confirmation', tool_use_id: 'sevt_01HZZZZZZZZZZZZZZZZZZZZZZZ', result: 'allow' }),
      'events[1].tool_use_id',
    ),
  )
  t.same(await listAll(session.id), before, 'no refused batch left an event behind')
  t.equal((await s.client.beta.sessions.retrieve(session.id)).status, 'idle')
})

// ------------------------------------------------------------------------------------------------ listing

t.test('the history list', async (t) => {
  const session = await newSession()
  const first = await turn(session.id, 'one')
  // A clear gap between the turns, so processed_at bounds can split them (a bounded wait on the clock).
  const idle1 = first.at(-1)!.processed_at as string
  while (Date.now() <= Date.parse(idle1) + 2) await new Promise((r) => setImmediate(r))
  const second = await turn(session.id, 'two')
  const streamed = [...first, ...second]
  const all = await listAll(session.id)
  t.equal(all.length, 12)

  t.test('is oldest first by default, with the ids the stream showed', async (t) => {
    t.same(
      all.map((e) => e.id),
      streamed.map((e) => e.id),
    )
    t.same(
      all.map((e) => e.type),
      [
        'user.message',
        'session.status_running',
        'span.model_request_start',
        'agent.message',
        'span.model_request_end',
        'session.status_idle',
        'user.message',
        'session.status_running',
        'span.model_request_start',
        'agent.message',
        'span.model_request_end',
        'session.status_idle',
      ],
    )
    for (const e of all) t.ok(e.processed_at, `${e.type} has a processed_at`)
  })

  t.test('order=desc is newest first', async (t) => {
    const desc = await listAll(session.id, { order: 'desc' })
    t.same(
      desc.map((e) => e.id),
      [...all].reverse().map((e) => e.id),
    )
  })

  t.test('pages with limit, in both orders', async (t) => {
    for (const order of ['asc', 'desc'] as const) {
      const ids: string[] = []
      const sizes: number[] = []
      let page = await s.client.beta.sessions.events.list(session.id, { limit: 5, order })
      for (let i = 0; i < 10; i++) {
        ids.push(...page.data.map((e) => e.id))
        sizes.push(page.data.length)
        if (!page.hasNextPage()) break
        page = await page.getNextPage()
      }
      t.same(sizes, [5, 5, 2], `${order}: pages of 5, 5, 2`)
      const want = all.map((e) => e.id)
      t.same(ids, order === 'asc' ? want : [...want].reverse(), `${order}: every event once, in order`)
    }
    const iterated: string[] = []
    for await (const e of s.client.beta.sessions.events.list(session.id, { limit: 3 })) iterated.push(e.id)
    t.same(
      iterated,
      all.map((e) => e.id),
      'the client auto-pages through the whole history',
    )
  })

  t.test('limit 1000 is allowed, 1001 is a 400 naming limit', async (t) => {
    const page = await s.client.beta.sessions.events.list(session.id, { limit: 1000 })
    t.equal(page.data.length, 12)
    t.equal(page.next_page, null)
    await expect400(t, s.client.beta.sessions.events.list(session.id, { limit: 1001 }), 'limit')
  })

  t.test('types[] filters by type', async (t) => {
    const got = await listAll(session.id, { types: ['agent.message', 'session.status_idle'] })
    t.same(
      got.map((e) => e.id),
      all.filter((e) => e.type === 'agent.message' || e.type === 'session.status_idle').map((e) => e.id),
    )
    const one = await listAll(session.id, { types: ['user.message'] })
    t.same(
      one.map((e) => e.id),
      [all[0].id, all[6].id],
    )
    const r = await raw(s.url, 'GET', `/v1/sessions/${session.id}/events?types[]=agent.shout`)
    t.equal(r.status, 400)
    t.match(r.json?.error?.message, 'types')
  })

  t.test('created_at bounds compare against processed_at', async (t) => {
    const at = (e: any) => e.processed_at as string
    const cases: Array<[string, (e: any) => boolean]> = [
      ['created_at[gt]', (e) => at(e) > idle1],
      ['created_at[gte]', (e) => at(e) >= idle1],
      ['created_at[lt]', (e) => at(e) < idle1],
      ['created_at[lte]', (e) => at(e) <= idle1],
    ]
    for (const [key, keep] of cases) {
      const got = await listAll(session.id, { [key]: idle1 })
      t.same(
        got.map((e) => e.id),
        all.filter(keep).map((e) => e.id),
        key,
      )
    }
    t.same(
      (await listAll(session.id, { 'created_at[lte]': idle1 })).map((e) => e.id),
      first.map((e) => e.id),
      'lte the first idle: the first turn',
    )
    t.same(
      (await listAll(session.id, { 'created_at[gt]': idle1 })).map((e) => e.id),
      second.map((e) => e.id),
      'after it: the second turn',
    )
    const both = await listAll(session.id, { 'created_at[gte]': at(all[1]), 'created_at[lt]': at(all[10]), types: ['session.status_idle'] })
    t.same(
      both.map((e) => e.id),
      [all[5].id],
      'bounds combine with each other and with types[]',
    )
  })

  t.test('replay hands out the same ids as list and stream', async (t) => {
    const replay = await s.client.beta.sessions.events.stream(session.id, { after: all[0].id } as any)
    const got = await collect(replay, (e) => e.id === all[11].id)
    t.same(
      got.map((e) => e.id),
      all.slice(1).map((e) => e.id),
    )
  })
})

// ----------------------------------------------------------------------------------------------- the stream

t.test('every SSE message is framed event:, id:, data:', async (t) => {
  const session = await newSession()
  const sse = await rawStream(`/v1/sessions/${session.id}/events/stream`)
  await send(session.id, text('frame me'))
  await sse.until(idleFramed)
  await sse.close()
  const msgs = messages(sse.text)
  const comments = msgs.filter((m) => m.startsWith(':'))
  const framed = msgs.filter((m) => !m.startsWith(':'))
  t.ok(comments.length >= 1, 'an opening comment')
  t.equal(framed.length, 6)
  for (const m of framed) {
    const match = /^event: ([^\n]+)\nid: ([^\n]+)\ndata: ([^\n]*)$/.exec(m)
    t.ok(match, `framed: ${JSON.stringify(m.slice(0, 60))}`)
    if (!match) continue
    const data = JSON.parse(match[3]!)
    t.equal(match[1], data.type, 'event: is the event type')
    t.equal(match[2], data.id, 'id: is the event id')
  }
  const list = await listAll(session.id)
  t.same(
    framed.map((m) => /\nid: ([^\n]+)/.exec(m)![1]),
    list.map((e) => e.id),
    'the same ids as the history',
  )
})

t.test('headers go out at once, before any event', async (t) => {
  const session = await newSession()
  // A new idle session has no event to send: the fetch can only resolve if the headers went out on their own.
  const sse = await rawStream(`/v1/sessions/${session.id}/events/stream`)
  t.equal(sse.res.status, 200)
  t.match(sse.res.headers.get('content-type'), /^text\/event-stream/)
  t.match(sse.res.headers.get('request-id'), /^req_/)
  await sse.until((text) => text.length > 0)
  t.ok(
    messages(sse.text).every((m) => m.startsWith(':')),
    'only comments so far',
  )
  await sse.close()
})

t.test('Accept: application/json still gets the event stream', async (t) => {
  const session = await newSession()
  const sse = await rawStream(`/v1/sessions/${session.id}/events/stream`, { accept: 'application/json' })
  t.equal(sse.res.status, 200)
  t.match(sse.res.headers.get('content-type'), /^text\/event-stream/)
  await send(session.id, text('hi'))
  await sse.until(idleFramed)
  t.match(sse.text, /event: agent\.message\nid: sevt_/)
  await sse.close()
})

t.test('event_deltas[] previews', async (t) => {
  const session = await newSession()
  const stream = (q: Record<string, unknown>) => s.client.beta.sessions.events.stream(session.id, q as any)
  const [withMsg, plain, withThinking, withBoth] = await Promise.all([
    stream({ event_deltas: ['agent.message'] }),
    stream({}),
    stream({ event_deltas: ['agent.thinking'] }),
    stream({ event_deltas: ['agent.message', 'agent.thinking'] }),
  ])
  s.model.enqueue({
    steps: [
      { type: 'thinking', thinking: 'let me think about this' },
      { type: 'text', text: 'Hello there, friend', chunks: 3 },
      { type: 'text', text: 'second block', chunks: 2 },
    ],
  })
  await send(session.id, text('preview please'))
  const [a, b, c, d] = await Promise.all([withMsg, plain, withThinking, withBoth].map((st) => collect(st, isIdle)))
  const msg = a!.find((e) => e.type === 'agent.message')
  const thinking = a!.find((e) => e.type === 'agent.thinking')
  t.same(msg.content, [
    { type: 'text', text: 'Hello there, friend' },
    { type: 'text', text: 'second block' },
  ])

  t.test('agent.message: event_start, event_deltas with index, then the final event with the same id', async (t) => {
    const previews = a!.filter((e) => e.type === 'event_start' || e.type === 'event_delta')
    t.same(previews[0], { type: 'event_start', event: { type: 'agent.message', id: msg.id } })
    const deltas = previews.slice(1)
    t.equal(deltas.length, 5, 'three deltas for the first block, two for the second')
    t.ok(deltas.every((e) => e.type === 'event_delta' && e.event_id === msg.id && e.delta.type === 'content_delta'))
    t.same(
      deltas.map((e) => e.delta.index),
      [0, 0, 0, 1, 1],
    )
    const joined: string[] = []
    for (const e of deltas) joined[e.delta.index] = (joined[e.delta.index] ?? '') + e.delta.content.text
    t.same(joined, ['Hello there, friend', 'second block'], 'the deltas add up to the final content')
    t.ok(a!.indexOf(previews.at(-1)) < a!.indexOf(msg), 'the final event comes after its deltas')
    t.notOk(
      a!.some((e) => e.type === 'event_start' && e.event.type === 'agent.thinking'),
      'no thinking preview unless asked',
    )
  })

  t.test('without event_deltas there are no previews', async (t) => {
    t.notOk(b!.some((e) => e.type === 'event_start' || e.type === 'event_delta'))
    t.same(
      b!.map((e) => e.id),
      a!.filter((e) => e.id).map((e) => e.id),
      'the same stored events',
    )
  })

  t.test('agent.thinking previews are start-only', async (t) => {
    const previews = c!.filter((e) => e.type === 'event_start' || e.type === 'event_delta')
    t.same(previews, [{ type: 'event_start', event: { type: 'agent.thinking', id: thinking.id } }])
    t.ok(c!.findIndex((e) => e.type === 'event_start') < c!.findIndex((e) => e.type === 'agent.thinking'))
    t.ok(c!.some((e) => e.type === 'agent.thinking' && e.id === thinking.id))
  })

  t.test('both types: both previews', async (t) => {
    const starts = d!.filter((e) => e.type === 'event_start').map((e) => e.event)
    t.same(starts, [
      { type: 'agent.thinking', id: thinking.id },
      { type: 'agent.message', id: msg.id },
    ])
    t.equal(d!.filter((e) => e.type === 'event_delta').length, 5)
  })
})

t.test('replay after an event id, then live, without duplicates', async (t) => {
  const session = await newSession()
  const first = await turn(session.id, 'one')
  const from = first[1] // session.status_running

  const check = async (t: Test, stream: AsyncIterable<any>, idlesWanted: number) => {
    const got = await collect(stream, (_e, all) => all.filter(isIdle).length === idlesWanted, 15_000)
    const ids = got.map((e) => e.id)
    t.equal(new Set(ids).size, ids.length, 'no duplicates')
    const all = await listAll(session.id)
    const i = all.findIndex((e) => e.id === from.id)
    t.same(
      ids,
      all.slice(i + 1).map((e) => e.id),
      'exactly what came after the id, in order',
    )
    return got
  }

  await t.test('?after=', async (t) => {
    const stream = await s.client.beta.sessions.events.stream(session.id, { after: from.id } as any)
    const live = check(t, stream, 2)
    await send(session.id, text('two'))
    const got = await live
    t.same(
      got.slice(0, 4).map((e) => e.type),
      ['span.model_request_start', 'agent.message', 'span.model_request_end', 'session.status_idle'],
    )
    t.equal(got.at(-1).type, 'session.status_idle')
    t.ok(
      got.some((e) => e.type === 'user.message' && e.content[0].text === 'two'),
      'the live part carries the new turn',
    )
  })

  await t.test('Last-Event-ID header', async (t) => {
    const stream = await s.client.beta.sessions.events.stream(session.id, {}, { headers: { 'Last-Event-ID': from.id } })
    const live = check(t, stream, 3)
    await send(session.id, text('three'))
    const got = await live
    t.ok(got.some((e) => e.type === 'user.message' && e.content[0].text === 'three'))
  })

  await t.test('an id that is not an event of the session is a 400', async (t) => {
    await expect400(t, s.client.beta.sessions.events.stream(session.id, { after: 'sevt_01HZZZZZZZZZZZZZZZZZZZZZZZ' } as any), 'after')
  })
})

t.test('keepalive comments arrive on a quiet stream', async (t) => {
  await keepalive.until((text) => text.includes(': keepalive\n\n'), 10_000)
  t.ok(
    messages(keepalive.text).every((m) => m.startsWith(':')),
    'only comments on an idle session',
  )
})
