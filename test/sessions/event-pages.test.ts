// GET …/events pages by stream sequence: a long history, written straight into the events stream in the stored
// format and interleaved with another session's records, is paged through with every order, limit and filter;
// the pages joined must equal the whole history folded at once (processed_at from Troupe-Processed headers and
// `_processed` records, however far after their event), as the list did before it paged by window.
import t from 'tap'
import { jetstream } from '@nats-io/jetstream'
import { connect, headers } from '@nats-io/transport-node'
import { encodeCursor } from '../../protocol/cursor.js'
import { EventHeaders } from '../../protocol/events.js'
import { newId } from '../../protocol/ids.js'
import { eventsSubject } from '../../protocol/subjects.js'
import { raw } from '../helpers/troupe.js'
import { agentAndEnv, sessionStack, until } from './_helpers.js'

interface Rec {
  type: string
  body: Record<string, any>
  processed?: string[]
}

/** A deterministic generator, so a failure replays. */
function rng(seed: number) {
  let s = seed >>> 0
  return (n: number) => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0
    return (s >>> 8) % n
  }
}

const BASE = Date.parse('2026-03-01T00:00:00Z')

/**
 * A history as the actor writes it: turns of service events; the user.message that starts a turn marked by the
 * turn's first event (a header) or by a `_processed` record; now and then a message queued mid-turn and marked
 * only when the next turn starts (tens of records later), an interrupt marked together with it, two
 * session.updated (a filter that matches rarely), and a last message never handled.
 */
function history(turns: number, rand: (n: number) => number): Rec[] {
  const recs: Rec[] = []
  const at = () => new Date(BASE + recs.length * 7).toISOString()
  const client = (type: string, extra: Record<string, unknown> = {}) => {
    const id = newId('sevt')
    recs.push({ type, body: { type, id, ...extra, processed_at: null } })
    return id
  }
  const service = (type: string, extra: Record<string, unknown> = {}, processed?: string[]) => {
    const id = newId('sevt')
    recs.push({ type, body: { type, id, ...extra, processed_at: at() }, processed })
  }
  let carried: string[] = []
  for (let turn = 0; turn < turns; turn++) {
    const msg = client('user.message', { content: [{ type: 'text', text: `turn ${turn}` }] })
    const marked = [...carried, msg]
    carried = []
    if (rand(4) === 0) {
      recs.push({ type: '_processed', body: { type: '_processed', ids: marked, processed_at: at() } })
      service('session.status_running')
    } else service('session.status_running', {}, marked)
    const body = 1 + rand(turn % 10 === 0 ? 60 : 8)
    for (let i = 0; i < body; i++) {
      if (rand(12) === 0 && !carried.length) {
        carried.push(client('user.message', { content: [{ type: 'text', text: `queued in ${turn}` }] }))
        if (rand(2) === 0) carried.push(client('user.interrupt'))
      }
      service(['agent.message', 'agent.tool_use', 'agent.tool_result', 'span.model_request_start'][rand(4)]!)
    }
    if (turn === Math.floor(turns / 3) || turn === Math.floor((2 * turns) / 3)) service('session.updated', { title: `t${turn}` })
    service('session.status_idle', { stop_reason: { type: 'end_turn' }, stop_details: null })
  }
  client('user.message', { content: [{ type: 'text', text: 'never handled' }] })
  return recs
}

/** The whole history folded at once: what every page must agree with. */
function folded(recs: Rec[]) {
  const byId = new Map<string, any>()
  const rows: any[] = []
  for (const r of recs) {
    const ev = structuredClone(r.body)
    const marks = r.type === '_processed' ? ev.ids : r.processed
    for (const id of marks ?? []) {
      const e = byId.get(id)
      if (e) e.processed_at = ev.processed_at
    }
    if (r.type.startsWith('_')) continue
    rows.push(ev)
    byId.set(ev.id, ev)
  }
  return rows
}

// One server for both tests: each writes its own session's events, and neither asserts anything of the other's.
const s = await sessionStack({ TROUPE_SESSION_IDLE_MS: '200' })

t.test('pages of a long, interleaved history join up to the whole history, folded', async (t) => {
  const { agent, env } = await agentAndEnv(s.client)
  const session = await s.client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
  const other = newId('sesn')
  const rand = rng(7)
  const recs = history(420, rand)
  t.ok(recs.length > 2500, `${recs.length} records: more than one page's scan budget`)

  const nc = await connect({ servers: s.nats.url })
  t.teardown(() => nc.close())
  const js = jetstream(nc)
  const enc = new TextEncoder()
  const publish = (subject: string, r: Rec) => {
    const h = headers()
    h.set(EventHeaders.type, r.type)
    if (r.body.id) h.set(EventHeaders.id, r.body.id)
    if (r.processed?.length) h.set(EventHeaders.processed, r.processed.join(','))
    return js.publish(subject, enc.encode(JSON.stringify(r.body)), { headers: h })
  }
  const t0 = Date.now()
  const noise = (n: number) =>
    Array.from({ length: n }, () =>
      publish(eventsSubject(other), { type: 'agent.message', body: { type: 'agent.message', id: newId('sevt'), processed_at: new Date(BASE).toISOString() } }),
    )
  // Dense stretches, sparse ones, and one long gap of another session's records, so desc windows must grow.
  for (let i = 0; i < recs.length; i += 50) {
    await Promise.all(recs.slice(i, i + 50).map((r) => publish(eventsSubject(session.id), r)))
    if (rand(3) === 0) await Promise.all(noise(1 + rand(200)))
    if (i === 1500) await Promise.all(noise(5000))
  }
  t.comment(`published in ${Date.now() - t0} ms`)
  const expected = folded(recs)
  const lastId = expected[expected.length - 1].id

  const url = (q: Record<string, string | string[]>) => {
    const p = new URLSearchParams()
    for (const [k, v] of Object.entries(q)) for (const x of [v].flat()) p.append(k, x)
    return `/v1/sessions/${session.id}/events?${p}`
  }
  // The actor that created the session leaves memory; from then on the list reads the stream.
  await until('the published history to show', async () => {
    const r = await raw(s.url, 'GET', url({ order: 'desc', limit: '1' }))
    return r.json?.data?.[0]?.id === lastId
  })

  async function all(q: Record<string, string | string[]>) {
    const pages: any[][] = []
    const cursors: Array<string | null> = []
    let page: string | undefined
    for (let i = 0; i < 5000; i++) {
      const r = await raw(s.url, 'GET', url(page ? { ...q, page } : q))
      if (r.status !== 200) throw new Error(`${JSON.stringify(q)}: ${r.status} ${r.text}`)
      pages.push(r.json.data)
      cursors.push(r.json.next_page)
      if (!r.json.next_page) return { pages, cursors, events: pages.flat() }
      page = r.json.next_page
    }
    throw new Error('paging did not end')
  }

  const mid = expected[Math.floor(expected.length / 2)].processed_at
  const late = expected[Math.floor((expected.length * 3) / 4)].processed_at
  const inTime = (e: any, gte: string, lt: string) => e.processed_at !== null && e.processed_at >= gte && e.processed_at < lt
  const cases: Array<[string, Record<string, string | string[]>, any[], boolean]> = [
    ['asc, default limit', {}, expected, true],
    ['asc, limit 37', { limit: '37' }, expected, true],
    ['asc, limit 1000', { limit: '1000' }, expected, true],
    ['desc, limit 100', { order: 'desc', limit: '100' }, [...expected].reverse(), true],
    ['desc, limit 53', { order: 'desc', limit: '53' }, [...expected].reverse(), true],
    ['user.message only, asc', { 'types[]': 'user.message', limit: '30' }, expected.filter((e) => e.type === 'user.message'), false],
    [
      'user.message and interrupts, desc',
      { 'types[]': ['user.message', 'user.interrupt'], order: 'desc', limit: '29' },
      [...expected].reverse().filter((e) => e.type === 'user.message' || e.type === 'user.interrupt'),
      false,
    ],
    ['a time range, asc', { 'created_at[gte]': mid, 'created_at[lt]': late, limit: '50' }, expected.filter((e) => inTime(e, mid, late)), false],
    [
      'a time range, desc',
      { 'created_at[gte]': mid, 'created_at[lt]': late, order: 'desc', limit: '50' },
      [...expected].reverse().filter((e) => inTime(e, mid, late)),
      false,
    ],
    ['a rare type, asc', { 'types[]': 'session.updated', limit: '5' }, expected.filter((e) => e.type === 'session.updated'), false],
    [
      'a rare type, desc',
      { 'types[]': 'session.updated', order: 'desc', limit: '5' },
      [...expected].reverse().filter((e) => e.type === 'session.updated'),
      false,
    ],
  ]
  for (const [name, q, want, full] of cases) {
    const t0 = Date.now()
    const got = await all(q)
    t.comment(`${name}: ${got.pages.length} pages in ${Date.now() - t0} ms`)
    const limit = Number(q.limit ?? 100)
    t.same(got.events, want, `${name}: ${want.length} events, processed_at folded as from the whole history`)
    t.ok(
      got.pages.every((p) => p.length <= limit),
      `${name}: no page over the limit`,
    )
    // Without a filter every page but the last is full, as before; a rare filter answers short pages with a cursor.
    if (full)
      t.ok(
        got.pages.slice(0, -1).every((p) => p.length === limit),
        `${name}: every page but the last is full`,
      )
  }
  const forged = await raw(s.url, 'GET', url({ page: encodeCursor(`session_events:${session.id}`, { order: 'asc' }, 'x') }))
  t.equal(forged.status, 400, 'a cursor that is not a sequence is refused, not a 500')
  t.match(forged.json?.error?.message, /page/)
  const rare = await all({ 'types[]': 'session.updated', limit: '5' })
  t.ok(rare.pages.length > 1, `a rare filter stops after its scan budget and hands out a cursor (${rare.pages.length} pages)`)
  t.equal(expected.find((e) => e.content?.[0]?.text === 'never handled').processed_at, null, 'the last message was never handled')
  const queued = expected.filter((e) => e.content?.[0]?.text?.startsWith('queued in'))
  t.ok(queued.length > 5 && queued.every((e) => e.processed_at !== null), `${queued.length} messages queued mid-turn were marked when the next turn started`)
})

t.test('a page that would not fit in one NATS message ends early, with a cursor, never a 500', async (t) => {
  const { agent, env } = await agentAndEnv(s.client)
  const session = await s.client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
  const nc = await connect({ servers: s.nats.url })
  t.teardown(() => nc.close())
  const js = jetstream(nc)
  // Five stored events of 10 MiB each: 50 MiB in all, more than a reply may carry (half of max_payload, 32 MiB).
  const big = 'x'.repeat(10 * 1024 * 1024)
  const ids: string[] = []
  for (let i = 0; i < 5; i++) {
    const id = newId('sevt')
    ids.push(id)
    const h = headers()
    h.set(EventHeaders.type, 'agent.message')
    h.set(EventHeaders.id, id)
    const body = { type: 'agent.message', id, content: [{ type: 'text', text: big }], processed_at: new Date(BASE).toISOString() }
    await js.publish(eventsSubject(session.id), new TextEncoder().encode(JSON.stringify(body)), { headers: h })
  }
  const seen: string[] = []
  const sizes: number[] = []
  let page: string | undefined
  for (let i = 0; i < 10; i++) {
    const r = await raw(s.url, 'GET', `/v1/sessions/${session.id}/events?limit=100${page ? `&page=${encodeURIComponent(page)}` : ''}`)
    t.equal(r.status, 200, `page ${i} answers 200`)
    sizes.push(r.json.data.length)
    seen.push(...r.json.data.map((e: any) => e.id))
    for (const e of r.json.data) t.equal(e.content[0].text.length, big.length, 'content intact')
    if (!r.json.next_page) break
    page = r.json.next_page
  }
  t.same(seen, ids, 'every event once, in order, across the shortened pages')
  t.ok(sizes.length > 1 && sizes.every((n) => n >= 1 && n < 5), `pages of ${sizes.join(', ')} events`)
})
