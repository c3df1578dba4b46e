import t from 'tap'
import { raw } from '../helpers/troupe.js'
import { agentAndEnv, collect, isIdle, sessionStack, failure, isError } from './_helpers.js'

// SPEC "States and transitions" › Session: archive and DELETE; DECISIONS: archived sessions report `terminated`.

const s = await sessionStack()
const sessions = s.client.beta.sessions

const message = (text: string) => ({ events: [{ type: 'user.message', content: [{ type: 'text', text }] }] }) as any

async function newSession() {
  const { agent, env } = await agentAndEnv(s.client)
  return { agent, env, session: await sessions.create({ agent: agent.id, environment_id: env.id } as any) }
}

/**
 * A session whose turn hangs in the model request: running until `stop()` interrupts it (and waits for idle).
 * The stream was opened before the message, so the idle event cannot be missed.
 */
async function runningSession() {
  const made = await newSession()
  const id = made.session.id
  const stream = await sessions.events.stream(id)
  const before = s.model.requests.length
  s.model.enqueue({ hang: true })
  await sessions.events.send(id, message('hang'))
  await s.model.waitForRequests(before + 1)
  const stop = async () => {
    await sessions.events.send(id, { events: [{ type: 'user.interrupt' }] } as any)
    await collect(stream, isIdle)
  }
  return { ...made, stop }
}

/** Runs `p` to completion or fails after `ms`, calling `onTimeout` (to abort a stream) first. */
async function within<T>(ms: number, what: string, p: Promise<T>, onTimeout: () => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onTimeout()
      reject(new Error(`timed out: ${what}`))
    }, ms)
  })
  try {
    return await Promise.race([p, timeout])
  } finally {
    clearTimeout(timer)
  }
}

// ------------------------------------------------------------------------------------------------ archive

t.test('archive sets archived_at and the session reports terminated', async (t) => {
  const { session } = await newSession()
  const archived = await sessions.archive(session.id)
  t.equal(archived.id, session.id)
  t.ok(archived.archived_at, 'archived_at set')
  t.ok(Date.parse(archived.archived_at!) >= Date.parse(session.created_at))
  t.equal(archived.status, 'terminated')
  const got = await sessions.retrieve(session.id)
  t.equal(got.status, 'terminated')
  t.equal(got.archived_at, archived.archived_at)
  const history = (await sessions.events.list(session.id)).data.map((e: any) => e.type)
  t.same(history, ['session.status_terminated'], 'the history records the termination')
})

t.test('archive is idempotent', async (t) => {
  const { session } = await newSession()
  const first = await sessions.archive(session.id)
  const second = await sessions.archive(session.id)
  t.equal(second.archived_at, first.archived_at, 'archived_at does not move')
  t.equal(second.status, 'terminated')
  t.equal((await sessions.events.list(session.id)).data.length, 1, 'no second event')
})

t.test('archive while running is a 409 (x-should-retry: false)', async (t) => {
  const { session, stop } = await runningSession()
  try {
    const err = await failure(sessions.archive(session.id))
    isError(t, err, 409, 'conflict_error', /running/)
    t.equal(err.headers?.get('x-should-retry'), 'false')
    const got = await sessions.retrieve(session.id)
    t.equal(got.archived_at, null, 'not archived')
    t.equal(got.status, 'running')
  } finally {
    await stop()
  }
  t.ok((await sessions.archive(session.id)).archived_at, 'archivable once idle')
})

t.test('archived sessions are hidden from the list unless include_archived', async (t) => {
  const { agent, session } = await newSession()
  await sessions.archive(session.id)
  t.same((await sessions.list({ agent_id: agent.id })).data, [])
  const all = await sessions.list({ agent_id: agent.id, include_archived: true } as any)
  t.same(
    all.data.map((x) => [x.id, x.status]),
    [[session.id, 'terminated']],
  )
})

t.test('an archived session accepts no events (409) and no updates (409)', async (t) => {
  const { session } = await newSession()
  await sessions.archive(session.id)
  const err = await failure(sessions.events.send(session.id, message('hello?')))
  isError(t, err, 409, 'conflict_error', /archived/)
  t.equal(err.headers?.get('x-should-retry'), 'false')
  const interrupt = await failure(sessions.events.send(session.id, { events: [{ type: 'user.interrupt' }] } as any))
  t.equal(interrupt.status, 409, 'not even an interrupt')
  const upd = await failure(sessions.update(session.id, { title: 'late' } as any))
  isError(t, upd, 409, 'conflict_error', /archived/)
  t.equal((await sessions.events.list(session.id)).data.length, 1, 'nothing was stored')
  t.equal((await sessions.retrieve(session.id)).title, null)
})

t.test('an archive racing a message never leaves an archived session running', async (t) => {
  // Whichever wins, the session ends up either archived and never running, or running with the archive refused.
  const { agent, env } = await agentAndEnv(s.client)
  s.model.setFallback({ hang: true })
  try {
    for (let i = 0; i < 10; i++) {
      const c = await sessions.create({ agent: agent.id, environment_id: env.id } as any)
      const [, archive] = await Promise.allSettled([sessions.events.send(c.id, message('race')), sessions.archive(c.id)])
      if (archive.status === 'fulfilled') {
        const types = (await sessions.events.list(c.id)).data.map((e: any) => e.type)
        t.notOk(types.includes('session.status_running'), `archived first: no turn ran (${types.join(', ')})`)
      } else {
        t.equal((archive.reason as any).status, 409, 'archive refused: the message came first')
        const stream = await sessions.events.stream(c.id)
        await sessions.events.send(c.id, { events: [{ type: 'user.interrupt' }] } as any)
        if ((await sessions.retrieve(c.id)).status !== 'idle') await collect(stream, isIdle)
        else stream.controller.abort()
      }
      t.same(await sessions.delete(c.id), { id: c.id, type: 'session_deleted' }, 'and it can always be deleted')
    }
  } finally {
    s.model.setFallback({})
  }
})

// ------------------------------------------------------------------------------------------------- delete

t.test('delete returns {id, type: session_deleted}; afterwards the session is gone (404)', async (t) => {
  const { session } = await newSession()
  s.model.enqueue({ steps: [{ type: 'text', text: 'hi' }] })
  const stream = await sessions.events.stream(session.id)
  await sessions.events.send(session.id, message('hello'))
  await collect(stream, isIdle)

  t.same(await sessions.delete(session.id), { id: session.id, type: 'session_deleted' })
  isError(t, await failure(sessions.retrieve(session.id)), 404, 'not_found_error', new RegExp(session.id))
  isError(t, await failure(sessions.events.list(session.id)), 404, 'not_found_error', new RegExp(session.id))
  isError(t, await failure(sessions.events.send(session.id, message('still there?'))), 404, 'not_found_error', new RegExp(session.id))
  isError(t, await failure(sessions.update(session.id, { title: 'x' } as any)), 404, 'not_found_error', new RegExp(session.id))
  isError(t, await failure(sessions.archive(session.id)), 404, 'not_found_error', new RegExp(session.id))
  isError(t, await failure(sessions.delete(session.id)), 404, 'not_found_error', new RegExp(session.id))
  const r = await raw(s.url, 'GET', `/v1/sessions/${session.id}/events/stream`)
  t.equal(r.status, 404, 'no stream either')
  t.equal(r.json?.error?.type, 'not_found_error')
  t.notOk(
    (await sessions.list({ include_archived: true } as any)).data.some((x) => x.id === session.id),
    'not listed',
  )
})

t.test('delete while running is a 409 (x-should-retry: false)', async (t) => {
  const { session, stop } = await runningSession()
  try {
    const err = await failure(sessions.delete(session.id))
    isError(t, err, 409, 'conflict_error', /running/)
    t.equal(err.headers?.get('x-should-retry'), 'false')
    t.equal((await sessions.retrieve(session.id)).status, 'running', 'still there, still running')
  } finally {
    await stop()
  }
  t.same(await sessions.delete(session.id), { id: session.id, type: 'session_deleted' }, 'deletable once idle')
})

t.test('an archived session can be deleted', async (t) => {
  const { session, env } = await newSession()
  await sessions.archive(session.id)
  t.same(await sessions.delete(session.id), { id: session.id, type: 'session_deleted' })
  isError(t, await failure(sessions.retrieve(session.id)), 404, 'not_found_error', new RegExp(session.id))
  t.same(await s.client.beta.environments.delete(env.id), { id: env.id, type: 'environment_deleted' }, 'its environment reference is released')
})

t.test('an open stream receives session.deleted, then ends', async (t) => {
  const { session } = await newSession()
  const stream = await sessions.events.stream(session.id)
  const seen: any[] = []
  const reading = (async () => {
    for await (const e of stream) seen.push(e)
  })()
  // Something stored first, so the stream is known to be live before the delete.
  await sessions.update(session.id, { title: 'before delete' } as any)
  await within(
    10_000,
    'the update on the stream',
    (async () => {
      while (!seen.some((e) => e.type === 'session.updated')) await new Promise((r) => setTimeout(r, 20))
    })(),
    () => stream.controller.abort(),
  )

  await sessions.delete(session.id)
  await within(10_000, 'the stream to end after session.deleted', reading, () => stream.controller.abort())
  t.same(
    seen.map((e) => e.type),
    ['session.updated', 'session.deleted'],
    'session.deleted is the last event',
  )
  const deleted = seen[seen.length - 1]
  t.match(deleted.id, /^sevt_/)
  t.ok(deleted.processed_at)
})

t.test('several open streams, on a session with no events yet, all receive session.deleted and end', async (t) => {
  const { session } = await newSession()
  // A stream's headers arrive only once it is subscribed, so each stream is live when this resolves.
  const streams = await Promise.all([1, 2, 3].map(() => sessions.events.stream(session.id)))
  const seen: any[][] = streams.map(() => [])
  const reading = streams.map((st, i) =>
    (async () => {
      for await (const e of st) seen[i]!.push(e)
    })(),
  )
  await sessions.delete(session.id)
  await within(10_000, 'every stream to end', Promise.all(reading), () => {
    for (const st of streams) st.controller.abort()
  })
  for (const x of seen)
    t.same(
      x.map((e) => e.type),
      ['session.deleted'],
    )
})
