import t from 'tap'
import { isolatedOrSkip } from '../helpers/sandbox-backend.js'
import { raw } from '../helpers/troupe.js'
import { until } from '../helpers/wait.js'
import { collect, failure, isIdle, sessionStack } from '../sessions/_helpers.js'

/**
 * Dreams (issue 42 point 5), through the official client's `beta.dreams`: a dream over two sessions producing a store
 * (its session reading the transcripts and writing the output store, the input store untouched), `update_existing`
 * holding its store (409 to a second such dream until the first has stopped), cancel, archive, the list's filters and
 * the refusals of bad input, each naming the field and the rule.
 */

const isolated = isolatedOrSkip()
const s = await sessionStack()
const { agents, sessions, environments, memoryStores, dreams } = s.client.beta
const memories = memoryStores.memories
const say = (text: string) => ({ type: 'user.message', content: [{ type: 'text', text }] })
const tool = (name: string, input: Record<string, unknown>) => ({ steps: [{ type: 'tool_use' as const, name, input }] })
const done = { steps: [{ type: 'text' as const, text: 'Curated: one new memory.' }] }

const agent = await agents.create({ name: 'worker', model: 'claude-sonnet-4-5', tools: [{ type: 'agent_toolset_20260401' }] } as any)
const env = await environments.create({ name: 'dream-env' } as any)

/** A dream's session's model requests are told apart by their system prompt; each gets the next scripted reply. */
const dreamReplies: any[] = []
s.model.setHandler((req) => {
  const system = typeof req.body?.system === 'string' ? req.body.system : JSON.stringify(req.body?.system ?? '')
  if (!system.includes('You are dreaming')) return undefined
  return dreamReplies.shift() ?? done
})

/** A session that has had one exchange: `text` from the user, `answer` from the model. */
async function pastSession(text: string, answer: string) {
  const session = await sessions.create({ agent: agent.id, environment_id: env.id } as any)
  s.model.enqueue({ steps: [{ type: 'text', text: answer }] })
  const stream = await sessions.events.stream(session.id)
  await sessions.events.send(session.id, { events: [say(text)] } as any)
  await collect(stream, isIdle, 30_000)
  return session
}

const ended = (d: any) => ['completed', 'failed', 'canceled'].includes(d.status)
const settle = (id: string) => until(`dream ${id} ends`, async () => ((d) => ended(d) && d)(await dreams.retrieve(id)), 90_000, 200)

t.test('a dream over two sessions produces a store written by its session', isolated, async (t) => {
  const one = await pastSession('our deploys are blue-green', 'Noted: blue-green deploys.')
  const two = await pastSession('the build needs node 20', 'Noted: node 20.')
  const input = await memoryStores.create({ name: 'Team Memory', description: 'What the team knows.' })
  await memories.create(input.id, { path: '/old.md', content: 'an old fact' })

  dreamReplies.push(
    tool('bash', { command: 'cat /mnt/session/uploads/transcripts/*.md; ls /mnt/memory' }),
    tool('write', { file_path: '/mnt/memory/team-memory-dream/deploys.md', content: 'Deploys are blue-green; builds need node 20.\n' }),
    tool('bash', { command: 'touch /mnt/memory/team-memory/nope.md 2>&1; echo rc=$?' }),
    done,
  )
  const base = s.model.requests.length
  const created = await dreams.create({
    inputs: [
      { type: 'memory_store', memory_store_id: input.id },
      { type: 'sessions', session_ids: [two.id, one.id] },
    ],
    model: 'claude-sonnet-4-5',
    instructions: 'Keep each memory to one line.',
  })
  t.match(created, {
    type: 'dream',
    status: 'pending',
    outputs: [],
    session_id: null,
    error: null,
    ended_at: null,
    archived_at: null,
    model: { id: 'claude-sonnet-4-5', speed: 'standard' },
    output_behavior: { type: 'create_new' },
    instructions: 'Keep each memory to one line.',
    usage: { input_tokens: 0, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
  })
  t.match(created.id, /^drm_/)
  t.same(created.inputs[1], { type: 'sessions', session_ids: [one.id, two.id].sort() }, 'session ids sorted')

  const dream = await settle(created.id)
  t.equal(dream.status, 'completed', JSON.stringify(dream.error))
  t.match(dream.session_id, /^sesn_/)
  t.ok(dream.ended_at)
  t.equal(dream.outputs.length, 1)
  const out = dream.outputs[0]!.memory_store_id
  t.not(out, input.id, 'create_new writes a new store')
  t.ok(dream.usage.input_tokens > 0 && dream.usage.output_tokens > 0, 'usage from its session')

  const outStore = await memoryStores.retrieve(out)
  t.equal(outStore.name, 'Team Memory (dream)')
  const listed = (await memories.list(out, { view: 'full' } as any)).data as any[]
  t.same(listed.map((m) => m.path).sort(), ['/deploys.md', '/old.md'], 'a copy of the input, and what the dream wrote')
  t.equal(listed.find((m) => m.path === '/deploys.md').content, 'Deploys are blue-green; builds need node 20.\n')
  const versions = (await memoryStores.memoryVersions.list(out, { session_id: dream.session_id } as any)).data as any[]
  t.same(
    versions.map((v) => `${v.operation} ${v.path}`),
    ['created /deploys.md'],
    "the dream's session wrote it",
  )
  t.same(
    ((await memories.list(input.id)).data as any[]).map((m) => m.path),
    ['/old.md'],
    'the input store is untouched',
  )

  // What the dream's session saw: the transcripts as files, the input read-only, its prompt and instructions.
  const session = await sessions.retrieve(dream.session_id!)
  t.same(
    session.resources.filter((r: any) => r.type === 'memory_store').map((r: any) => [r.memory_store_id, r.access, r.mount_path]),
    [
      [input.id, 'read_only', '/mnt/memory/team-memory'],
      [out, 'read_write', '/mnt/memory/team-memory-dream'],
    ],
  )
  const events = (await sessions.events.list(dream.session_id!, { limit: 100 } as any)).data as any[]
  const results = events.filter((e) => e.type === 'agent.tool_result')
  const text = (r: any) => r.content.map((c: any) => c.text).join('\n')
  t.match(text(results[0]), /our deploys are blue-green[\s\S]*Noted: node 20|the build needs node 20[\s\S]*blue-green/, 'both transcripts readable')
  t.match(text(results[0]), /team-memory\n[\s\S]*team-memory-dream|team-memory-dream/)
  t.match(text(results[2]), /Read-only file system[\s\S]*rc=1/, 'the input store is read-only to the dream')
  const system = s.model.requests.slice(base).find((r) => String(r.body.system).includes('You are dreaming'))!.body.system as string
  t.match(system, /Keep each memory to one line\./)
  t.match(system, /\/mnt\/session\/uploads\/transcripts/)
  t.match(system, /\/mnt\/memory\/team-memory \(read-only\)/)

  // The dream's own agent is archived: it leaves the agents list.
  t.notOk((await agents.list()).data.some((a: any) => a.id === session.agent.id))
})

t.test('update_existing holds its store: a second is 409 until the first stops; cancel', isolated, async (t) => {
  const store = await memoryStores.create({ name: 'Held' })
  // The dream's model request hangs until the cancel's interrupt aborts it.
  dreamReplies.push({ hang: true })
  const first = await dreams.create({
    inputs: [{ type: 'memory_store', memory_store_id: store.id }],
    model: { id: 'claude-sonnet-4-5', speed: 'standard' },
    output_behavior: { type: 'update_existing', memory_store_id: store.id },
  })
  await until(
    'the first dream runs its session',
    async () => ((d) => d.status === 'running' && d.session_id && d)(await dreams.retrieve(first.id)),
    60_000,
    100,
  )
  await until(
    'its model request',
    () => s.model.requests.some((r) => String(r.body?.system).includes(first.id) || String(JSON.stringify(r.body?.messages)).includes(first.id)),
    30_000,
  )

  const second = await failure(
    dreams.create({
      inputs: [{ type: 'memory_store', memory_store_id: store.id }],
      model: 'claude-sonnet-4-5',
      output_behavior: { type: 'update_existing', memory_store_id: store.id },
    }),
  )
  t.equal(second.status, 409)
  t.equal(second.error.error.type, 'conflict_error')
  t.match(second.error.error.message, new RegExp(`memory store ${store.id} is being updated by dream ${first.id}`))
  t.equal(second.headers.get('x-should-retry'), 'false')

  // create_new on the same store holds nothing (its session gets the fallback reply and completes).
  const copy = await dreams.create({ inputs: [{ type: 'memory_store', memory_store_id: store.id }], model: 'claude-sonnet-4-5' })
  const archiveRunning = await failure(dreams.archive(first.id))
  t.equal(archiveRunning.status, 400)
  t.match(archiveRunning.error.error.message, /is running; only a completed, failed or canceled dream can be archived/)

  const canceled = await dreams.cancel(first.id)
  t.equal(canceled.status, 'canceled')
  t.ok(canceled.ended_at)
  t.same(await dreams.cancel(first.id), canceled, 'canceling a canceled dream returns it unchanged')
  t.equal((await settle(copy.id)).status, 'completed')
  // Once its session has stopped, the store is let go: a new update_existing dream is taken.
  const third = await until(
    'the store let go',
    () =>
      dreams
        .create({
          inputs: [{ type: 'memory_store', memory_store_id: store.id }],
          model: 'claude-sonnet-4-5',
          output_behavior: { type: 'update_existing', memory_store_id: store.id },
        })
        .catch((e: any) => {
          if (e.status === 409) return undefined
          throw e
        }),
    60_000,
    250,
  )
  const session = await sessions.retrieve(canceled.session_id!)
  t.not(session.status, 'running', "the canceled dream's session stopped")
  const finished = await settle(third.id)
  t.equal(finished.status, 'completed', JSON.stringify(finished.error))
  t.same(finished.outputs, [{ type: 'memory_store', memory_store_id: store.id }], 'update_existing writes into its input')
  const cancelDone = await failure(dreams.cancel(third.id))
  t.equal(cancelDone.status, 400)
  t.match(cancelDone.error.error.message, /is completed already; only a pending or running dream can be canceled/)
})

t.test('list filters and archive', async (t) => {
  const store = await memoryStores.create({ name: 'Listed' })
  const a = await dreams.create({ inputs: [{ type: 'memory_store', memory_store_id: store.id }], model: 'claude-sonnet-4-5' })
  const b = await dreams.create({ inputs: [{ type: 'memory_store', memory_store_id: store.id }], model: 'claude-sonnet-4-5' })
  await dreams.cancel(b.id)
  // On the local backend a dream's session cannot mount stores: it fails, naming why; on the isolated one it completes.
  const aEnded = await settle(a.id)
  const ids = async (q: Record<string, unknown>) => {
    const out: string[] = []
    for await (const d of dreams.list(q as any)) if (d.id === a.id || d.id === b.id) out.push(d.id)
    return out
  }
  t.same(await ids({}), [b.id, a.id], 'newest first')
  t.same(await ids({ statuses: ['canceled'] }), [b.id])
  t.same(await ids({ statuses: [aEnded.status, 'canceled'] }), [b.id, a.id])
  t.same(await ids({ statuses: ['pending', 'running'] }), [])
  t.same(
    await ids({ 'created_at[gt]': a.created_at }),
    [b.id].filter(() => b.created_at > a.created_at),
    'created_at[gt] is exclusive',
  )
  t.same(
    await ids({ 'created_at[lt]': b.created_at }),
    [a.id].filter(() => b.created_at > a.created_at),
    'created_at[lt] is exclusive',
  )

  const archived = await dreams.archive(a.id)
  t.ok(archived.archived_at)
  t.same(await dreams.archive(a.id), archived, 'archiving an archived dream returns it unchanged')
  t.same(await ids({}), [b.id], 'archived dreams are left out')
  t.same(await ids({ include_archived: true }), [b.id, a.id])
  t.equal((await dreams.retrieve(a.id)).archived_at, archived.archived_at, 'an archived dream is still fetched by id')

  const page = await dreams.list({ limit: 1, include_archived: true } as any)
  t.equal(page.data.length, 1)
  t.ok(page.hasNextPage())
})

t.test('bad input: 4xx naming the field and the rule', async (t) => {
  const store = await memoryStores.create({ name: 'Bad' })
  const session = await sessions.create({ agent: agent.id, environment_id: env.id } as any)
  const mem = { type: 'memory_store', memory_store_id: store.id }
  const refused = async (body: unknown, status: number, message: RegExp) => {
    const e = await failure(dreams.create(body as any))
    t.equal(e.status, status, `${JSON.stringify(body).slice(0, 120)} → ${e.error?.error?.message}`)
    t.match(e.error.error.message, message)
  }
  await refused({ model: 'm' }, 400, /inputs/)
  await refused({ inputs: [], model: 'm' }, 400, /inputs/)
  await refused({ inputs: [mem, mem], model: 'm' }, 400, /inputs\[1\].*must not repeat a memory_store entry/)
  await refused({ inputs: [{ type: 'sessions', session_ids: [] }], model: 'm' }, 400, /inputs\[0\]\.session_ids/)
  await refused({ inputs: [{ type: 'sessions', session_ids: [session.id, session.id] }], model: 'm' }, 400, /inputs\[0\]\.session_ids\[1\].*must not repeat/)
  await refused(
    { inputs: [{ type: 'sessions', session_ids: Array.from({ length: 101 }, (_, i) => `sesn_${i}`) }], model: 'm' },
    400,
    /inputs\[0\]\.session_ids/,
  )
  await refused({ inputs: [{ type: 'other' }], model: 'm' }, 400, /inputs\[0\]\.type.*"memory_store" or "sessions"/)
  await refused({ inputs: [mem] }, 400, /model/)
  await refused({ inputs: [mem], model: '' }, 400, /model/)
  await refused({ inputs: [mem], model: { id: 'm', speed: 'fast' } }, 400, /model\.speed.*standard/)
  await refused({ inputs: [mem], model: 'm', instructions: '' }, 400, /instructions/)
  await refused({ inputs: [mem], model: 'm', instructions: 'x'.repeat(4097) }, 400, /instructions/)
  await refused({ inputs: [mem], model: 'm', output_behavior: { type: 'overwrite' } }, 400, /output_behavior\.type/)
  await refused(
    { inputs: [{ type: 'sessions', session_ids: [session.id] }], model: 'm', output_behavior: { type: 'update_existing', memory_store_id: store.id } },
    400,
    /output_behavior\.memory_store_id.*needs a memory_store entry/,
  )
  const other = await memoryStores.create({ name: 'Other' })
  await refused(
    { inputs: [mem], model: 'm', output_behavior: { type: 'update_existing', memory_store_id: other.id } },
    400,
    /output_behavior\.memory_store_id.*must be the memory store/,
  )
  await refused({ inputs: [mem], model: 'm', extra: 1 }, 400, /extra/)
  await refused(
    { inputs: [{ type: 'memory_store', memory_store_id: 'memstore_01JAAAAAAAAAAAAAAAAAAAAAAA' }], model: 'm' },
    404,
    /^inputs\[0\]\.memory_store_id: Memory store memstore_01J\w+ not found/,
  )
  await refused(
    { inputs: [mem, { type: 'sessions', session_ids: [session.id, 'sesn_01JAAAAAAAAAAAAAAAAAAAAAAA'] }], model: 'm' },
    404,
    /^inputs\[1\]\.session_ids\[1\]: Session sesn_01J\w+ not found/,
  )
  await memoryStores.archive(other.id)
  await refused(
    { inputs: [{ type: 'memory_store', memory_store_id: other.id }], model: 'm' },
    400,
    /^inputs\[0\]\.memory_store_id: memory store .* is archived/,
  )

  const missing = await failure(dreams.retrieve('drm_01JAAAAAAAAAAAAAAAAAAAAAAA'))
  t.equal(missing.status, 404)
  t.match(missing.error.error.message, /Dream drm_01JAAAAAAAAAAAAAAAAAAAAAAA not found/)
  t.equal((await failure(dreams.cancel('drm_01JAAAAAAAAAAAAAAAAAAAAAAA'))).status, 404)
  t.equal((await failure(dreams.archive('drm_01JAAAAAAAAAAAAAAAAAAAAAAA'))).status, 404)
  t.equal((await raw(s.url, 'GET', '/v1/dreams/not-a-dream')).status, 404)
  const badQuery = await raw(s.url, 'GET', '/v1/dreams?statuses[]=sleeping')
  t.equal(badQuery.status, 400)
  t.match(badQuery.json.error.message, /statuses/)
})
