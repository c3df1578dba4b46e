import t from 'tap'
import { failure } from '../agents/_util.js'
import Anthropic from '@anthropic-ai/sdk'
import { agentAndEnv, sessionStack, until } from '../sessions/_helpers.js'
import { startTroupe } from '../helpers/troupe.js'
import { wakeOf } from './wake.js'

/**
 * The work queue's calls one by one, through the official client (`client.beta.environments.work`): poll (blocking,
 * bounds, woken by a queue, two racing, reclaim), ack, the heartbeat's compare-and-set and its 412, TTL clamps and a
 * lapsed lease, stop (graceful, force, 409), metadata, list, stats, and the sessions token's scope.
 */

const s = await sessionStack()
const work = s.client.beta.environments.work
const TOOLSET = [{ type: 'agent_toolset_20260401' }]

async function selfHostedEnv() {
  const { agent, env } = await agentAndEnv(s.client, { tools: TOOLSET }, { config: { type: 'self_hosted' } })
  const session = () => s.client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
  return { env, agent, session }
}

/** Polls, acks and claims one item; returns it with the token from its secret and its first beat. */
async function claimOne(envId: string) {
  const item = (await work.poll(envId, { block_ms: 999 }))!
  await work.ack(item.id, { environment_id: envId })
  const beat = await work.heartbeat(item.id, { environment_id: envId, expected_last_heartbeat: 'NO_HEARTBEAT' })
  return { item, token: tokenOf(item.secret), beat }
}

/** A client holding `token` as its only credential, as the client's worker scopes one. */
const tokenClient = (token: string) => new Anthropic({ baseURL: s.url, apiKey: null, authToken: token, maxRetries: 0 })

const tokenOf = (secret: string | null) => JSON.parse(Buffer.from(secret!, 'base64url').toString('utf8')).sessions_token as string

t.test('poll: null at once when empty, a blocked poll woken by a queued item, block_ms bounds', async (t) => {
  const { env, session } = await selfHostedEnv()
  t.equal(await work.poll(env.id), null, 'no block_ms: answers at once')
  const t0 = Date.now()
  t.equal(await work.poll(env.id, { block_ms: 300 }), null)
  t.ok(Date.now() - t0 >= 280, 'blocked for block_ms')
  for (const bad of [0, 1000, -1]) {
    const err = await failure(work.poll(env.id, { block_ms: bad }))
    t.equal(err.status, 400, `block_ms ${bad}`)
  }
  const wake = await wakeOf(s.client, env.id, session)
  t.equal(wake.answered, wake.queued, 'the queued item')
  t.ok(wake.answeredAfterMs < 999, `woken before the block ended (${wake.answeredAfterMs} ms; ${wake.undecided} undecided attempts)`)
  const got = wake.item
  t.match(got, { type: 'work', state: 'queued', data: { type: 'session', id: wake.queued } })
  t.type(got!.secret, 'string', 'a poll carries the secret')
  t.equal((await work.retrieve(got!.id, { environment_id: env.id })).secret, null, 'nothing else does')
  const err = await failure(work.poll('env_nothere', {}))
  t.equal(err.status, 404)
})

t.test('two pollers racing for one item: one gets it; reclaim after reclaim_older_than_ms', async (t) => {
  const { env, session } = await selfHostedEnv()
  await session()
  const [a, b] = await Promise.all([work.poll(env.id, { block_ms: 200 }), work.poll(env.id, { block_ms: 200 })])
  t.equal([a, b].filter(Boolean).length, 1, 'exactly one poll got the item')
  const item = (a ?? b)!
  let stats = await work.stats(env.id)
  t.match(stats, { type: 'work_queue_stats', depth: 0, pending: 1, oldest_queued_at: item.created_at })
  t.equal(await work.poll(env.id), null, 'pending: not handed out again within the default 5000 ms')
  const again = await work.poll(env.id, { reclaim_older_than_ms: 0 })
  t.equal(again?.id, item.id, 'handed out again once older than reclaim_older_than_ms')
  t.not(tokenOf(again!.secret), tokenOf(item.secret), 'a new claim, a new token')
  await work.ack(item.id, { environment_id: env.id })
  stats = await work.stats(env.id)
  t.match(stats, { depth: 0, pending: 0, oldest_queued_at: null })
})

t.test('ack and the heartbeat compare-and-set: one claim wins, a stale beat is 412 with the lease', async (t) => {
  const { env, session } = await selfHostedEnv()
  await session()
  const item = (await work.poll(env.id))!
  const acked = await work.ack(item.id, { environment_id: env.id })
  t.match(acked, { state: 'starting' })
  t.type(acked.acknowledged_at, 'string')
  t.same(await work.ack(item.id, { environment_id: env.id }), acked, 'a second ack before the first beat: the same item')
  const claims = await Promise.allSettled([
    work.heartbeat(item.id, { environment_id: env.id, expected_last_heartbeat: 'NO_HEARTBEAT' }),
    work.heartbeat(item.id, { environment_id: env.id, expected_last_heartbeat: 'NO_HEARTBEAT' }),
  ])
  const won = claims.filter((c) => c.status === 'fulfilled')
  t.equal(won.length, 1, 'of two claims one wins')
  const lost = claims.find((c) => c.status === 'rejected') as PromiseRejectedResult
  t.equal(lost.reason.status, 412)
  t.equal(lost.reason.constructor.name, 'BetaHeartbeatPreconditionFailedError')
  const first = (won[0] as PromiseFulfilledResult<any>).value
  t.match(first, { type: 'work_heartbeat', lease_extended: true, state: 'active', ttl_seconds: 60 })
  t.match(lost.reason.error.error.details, {
    error_code: 'heartbeat_precondition_failed',
    current_state: { state: 'active', last_heartbeat: first.last_heartbeat },
  })
  const second = await work.heartbeat(item.id, { environment_id: env.id, expected_last_heartbeat: first.last_heartbeat })
  t.not(second.last_heartbeat, first.last_heartbeat, 'no two beats store the same value')
  const stale = await failure(work.heartbeat(item.id, { environment_id: env.id, expected_last_heartbeat: first.last_heartbeat }))
  t.equal(stale.status, 412)
  const err = await failure(work.ack(item.id, { environment_id: env.id }))
  t.equal(err.status, 409, 'an active item is not acked again')
  const got = await work.retrieve(item.id, { environment_id: env.id })
  t.match(got, { state: 'active', started_at: first.last_heartbeat, latest_heartbeat_at: second.last_heartbeat })
})

t.test('TTL: clamped to 2..600 s; a lapsed lease goes back to the queue and its old holder gets 412', async (t) => {
  const { env, session } = await selfHostedEnv()
  await session()
  const { item, beat } = await claimOne(env.id)
  const big = await work.heartbeat(item.id, { environment_id: env.id, expected_last_heartbeat: beat.last_heartbeat, desired_ttl_seconds: 99_999 })
  t.equal(big.ttl_seconds, 600)
  const small = await work.heartbeat(item.id, { environment_id: env.id, expected_last_heartbeat: big.last_heartbeat, desired_ttl_seconds: 1 })
  t.equal(small.ttl_seconds, 2)
  // No beat for more than 2 s: the lease lapses and the item is queued again, for any poller.
  const next = await work.poll(env.id, { block_ms: 999 })
  t.equal(next, null, 'not yet')
  const back = await work.poll(env.id, { block_ms: 999 }).then((w) => w ?? work.poll(env.id, { block_ms: 999 }))
  t.equal(back?.id, item.id, 'queued again once the lease lapsed')
  t.match(back, { state: 'queued', acknowledged_at: null, started_at: null, latest_heartbeat_at: null })
  const old = await failure(work.heartbeat(item.id, { environment_id: env.id, expected_last_heartbeat: small.last_heartbeat }))
  t.equal(old.status, 412, 'the old holder’s next beat is 412, never 401/403')
  await work.ack(item.id, { environment_id: env.id })
  const claimed = await work.heartbeat(item.id, { environment_id: env.id, expected_last_heartbeat: 'NO_HEARTBEAT' })
  t.equal(claimed.state, 'active', 'the new holder claims it with NO_HEARTBEAT')
})

t.test('stop: queued → stopped; active → stopping, seen on the next beat; force → stopped; stopped → 409', async (t) => {
  const { env, session } = await selfHostedEnv()
  await session()
  const queued = (await work.list(env.id)).data[0]!
  const stopped = await work.stop(queued.id, { environment_id: env.id })
  t.match(stopped, { state: 'stopped' })
  t.type(stopped.stopped_at, 'string')
  t.equal(stopped.stop_requested_at, stopped.stopped_at, 'a stop asked for records when, even one that stops at once')
  const again = await failure(work.stop(queued.id, { environment_id: env.id }))
  t.equal(again.status, 409)
  t.equal(again.error.error.details.error_code, 'work_stopped')

  await session()
  const { item, beat } = await claimOne(env.id)
  const stopping = await work.stop(item.id, { environment_id: env.id })
  t.match(stopping, { state: 'stopping' })
  t.type(stopping.stop_requested_at, 'string')
  const seen = await work.heartbeat(item.id, { environment_id: env.id, expected_last_heartbeat: 'whatever' })
  t.match(seen, { state: 'stopping', lease_extended: true }, 'not compared once stopping')
  const forced = await work.stop(item.id, { environment_id: env.id, force: true })
  t.match(forced, { state: 'stopped', stop_requested_at: stopping.stop_requested_at }, 'the first request is kept')
  t.ok(forced.stopped_at! >= forced.stop_requested_at!)
  t.match(await work.heartbeat(item.id, { environment_id: env.id, expected_last_heartbeat: beat.last_heartbeat }), { state: 'stopped', lease_extended: false })

  // An active item forced to stop in one step: both moments recorded.
  await session()
  const active = await claimOne(env.id)
  const once = await work.stop(active.item.id, { environment_id: env.id, force: true })
  t.match(once, { state: 'stopped', stop_requested_at: String, stopped_at: String })
  t.equal(once.stop_requested_at, once.stopped_at)
  t.same(await work.retrieve(active.item.id, { environment_id: env.id }), once, 'as stored')
})

t.test('metadata: a patch, null deletes, limits answer invalid_metadata; list and stats', async (t) => {
  const { env, session } = await selfHostedEnv()
  await session()
  await session()
  const list = (await work.list(env.id)).data
  t.equal(list.length, 2)
  t.ok(list[0]!.created_at >= list[1]!.created_at, 'newest first')
  const id = list[0]!.id
  t.same((await work.update(id, { environment_id: env.id, metadata: { a: '1', b: '2' } })).metadata, { a: '1', b: '2' })
  t.same((await work.update(id, { environment_id: env.id, metadata: { a: null } })).metadata, { b: '2' })
  const many = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v']))
  const err = await failure(work.update(id, { environment_id: env.id, metadata: many }))
  t.equal(err.status, 400)
  t.equal(err.error.error.details.error_code, 'invalid_metadata')
  const long = await failure(work.update(id, { environment_id: env.id, metadata: { ['x'.repeat(65)]: 'v' } }))
  t.equal(long.error.error.details.error_code, 'invalid_metadata')
  const page = await work.list(env.id, { limit: 1 })
  t.equal(page.data.length, 1)
  t.ok(page.hasNextPage())
  const rest = await page.getNextPage()
  t.equal(rest.data[0]!.id, list[1]!.id)
  await work.poll(env.id, { 'Anthropic-Worker-ID': 'w1' })
  await work.poll(env.id, { 'Anthropic-Worker-ID': 'w2' })
  await work.poll(env.id, { 'Anthropic-Worker-ID': 'w1' })
  t.match(await work.stats(env.id), { depth: 0, pending: 2, workers_polling: 2 })
  const missing = await failure(work.retrieve('work_01NOTTHERE', { environment_id: env.id }))
  t.equal(missing.status, 404)
})

t.test('the sessions token: its item and its session, 403 elsewhere, 401 forged or truncated', async (t) => {
  const { env, session } = await selfHostedEnv()
  const mine = await session()
  const { item, token, beat } = await claimOne(env.id)
  t.match(token, /^trst1\./)
  const as = tokenClient(token)
  const aw = as.beta.environments.work
  t.equal((await as.beta.sessions.retrieve(mine.id)).id, mine.id, 'its session')
  t.ok(Array.isArray((await as.beta.sessions.events.list(mine.id)).data), 'its events')
  const next = await aw.heartbeat(item.id, { environment_id: env.id, expected_last_heartbeat: beat.last_heartbeat })
  t.equal(next.state, 'active', 'its heartbeat')

  const other = await session()
  const outOf = await failure(as.beta.sessions.retrieve(other.id))
  t.equal(outOf.status, 403)
  t.equal(outOf.error.error.details.error_code, 'sessions_token_scope')
  t.equal((await failure(as.beta.agents.list())).status, 403)
  t.equal((await failure(aw.list(env.id))).status, 403)
  t.equal((await failure(aw.poll(env.id))).status, 403)

  const forged = tokenClient(`${token.slice(0, -2)}xx`)
  const f = await failure(forged.beta.sessions.retrieve(mine.id))
  t.equal(f.status, 401)
  t.equal(f.error.error.details.error_code, 'sessions_token_invalid')
  const cut = tokenClient(token.slice(0, 20))
  t.equal((await failure(cut.beta.sessions.retrieve(mine.id))).status, 401)

  // The worker force-stops with its token: accepted on its own item.
  t.match(await aw.stop(item.id, { environment_id: env.id, force: true }), { state: 'stopped' })
  // It dies with its claim: every gateway hears the claim end.
  let dead: any
  for (let i = 0; i < 20 && !dead; i++) {
    dead = await as.beta.sessions.retrieve(mine.id).then(
      () => undefined,
      (err) => err,
    )
    if (!dead) await new Promise((r) => setTimeout(r, 50))
  }
  t.equal(dead?.status, 401, 'refused once its claim ended')
  t.match(dead?.error?.error?.message, /ended with its claim/)
  // A gateway that never heard the end (started after it) still refuses: the session asks the item's owner.
  const late = await startTroupe({ natsUrl: s.nats.url, env: { TROUPE_MODEL_BASE_URL: s.model.url, ANTHROPIC_API_KEY: 'fake-key' } })
  t.teardown(() => late.killNow())
  // A host joining moves partitions: what is moving answers 503 or 504 for a moment, not the token's verdict.
  const lateClient = new Anthropic({ baseURL: late.url, apiKey: null, authToken: token, maxRetries: 3 })
  const unheard = await until(
    'the late gateway to answer',
    () => failure(lateClient.beta.sessions.retrieve(mine.id)).then((e: any) => (e.status >= 500 ? undefined : e)),
    60_000,
    500,
  )
  t.equal(unheard.status, 401, 'refused by a gateway that did not hear the claim end')
  t.match(unheard.error.error.message, /ended with its claim/)
  // Stopped in order, so its partitions are handed back rather than lost until its lease lapses (the next tests' calls).
  await late.stop()
})

t.test('the client’s poller: claims every queued item in order, acks it, stops it after the loop body', async (t) => {
  const { env, session } = await selfHostedEnv()
  const made = [await session(), await session(), await session()]
  const seen: string[] = []
  for await (const w of work.poller({ environmentId: env.id, environmentKey: 'any-key', drain: true, blockMs: 100 } as any)) {
    t.equal((w as any).state, 'queued', 'yielded as polled')
    t.equal((await work.retrieve(w.id, { environment_id: env.id })).state, 'starting', 'acked before it is yielded')
    seen.push(w.data.id)
  }
  t.same(
    seen,
    made.map((m) => m.id),
    'oldest first, each once',
  )
  const items = (await work.list(env.id)).data
  t.ok(
    items.every((i) => i.state === 'stopping'),
    'stopped (gracefully) after the loop body: stopping until its lease runs out',
  )
})
