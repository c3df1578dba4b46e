import t from 'tap'
import { isolatedOrSkip } from '../helpers/sandbox-backend.js'
import { collect, failure, isIdle, sessionStack } from '../sessions/_helpers.js'

/**
 * Sessions mount memory stores (issue 42 point 4), through the official client: a `memory_store` resource attached at
 * creation (echoed as WIRE §9's MemoryStoreResource), materialised at /mnt/memory/<slug> before the first tool, what a
 * tool writes under a `read_write` mount stored as versions by `session_actor`, a `read_only` mount refusing writes
 * at the file system, API changes reaching an idle session's mount before its next tool, the refusals at creation, the
 * `memory_store_id` list filter, and the store held while a session has it.
 */

const isolated = isolatedOrSkip()
const s = await sessionStack()
const { agents, sessions, environments, memoryStores } = s.client.beta
const memories = memoryStores.memories
const versions = memoryStores.memoryVersions
const TOOLS = [{ type: 'agent_toolset_20260401' }]
const say = (text: string) => ({ type: 'user.message', content: [{ type: 'text', text }] })
const tool = (name: string, input: Record<string, unknown>) => ({ steps: [{ type: 'tool_use' as const, name, input }] })
const done = { steps: [{ type: 'text' as const, text: 'done' }] }

const agent = await agents.create({ name: 'memo', model: 'claude-sonnet-4-5', system: 'BASE', tools: TOOLS } as any)
const env = await environments.create({ name: 'mem-env' } as any)
const withStores = (resources: unknown[]) => sessions.create({ agent: agent.id, environment_id: env.id, resources } as any)

/** Sends `events` with the live stream open; the events up to idle. */
async function step(id: string, events: unknown[]) {
  const stream = await sessions.events.stream(id)
  await sessions.events.send(id, { events } as any)
  return collect(stream, isIdle, 30_000)
}
const results = (events: any[]) => events.filter((e) => e.type === 'agent.tool_result')
const text = (r: any) => r.content.map((c: any) => c.text).join('\n')

t.test('a session writes a memory with the write tool; a second reads it with bash; read_only refuses', isolated, async (t) => {
  const store = await memoryStores.create({ name: 'Team Notes', description: 'What the team learned.' })
  const one = await withStores([{ type: 'memory_store', memory_store_id: store.id, instructions: 'Keep notes short.' }])
  t.same(one.resources, [
    {
      type: 'memory_store',
      memory_store_id: store.id,
      access: 'read_write',
      instructions: 'Keep notes short.',
      name: 'Team Notes',
      description: 'What the team learned.',
      mount_path: '/mnt/memory/team-notes',
    },
  ])
  t.same((await sessions.retrieve(one.id)).resources, one.resources, 'as stored')
  t.same((await sessions.resources.list(one.id)).data, one.resources, 'listed among its resources')
  const held = await failure(memoryStores.delete(store.id))
  t.equal(held.status, 409, 'the store cannot be deleted while the session has it')

  const base = s.model.requests.length
  s.model.enqueue(tool('write', { file_path: '/mnt/memory/team-notes/notes.md', content: 'the build needs node 20\n' }), done)
  const written = await step(one.id, [say('remember')])
  t.notOk(results(written)[0].is_error, text(results(written)[0]))
  const system = s.model.requests[base]!.body.system as string
  t.match(system, /^BASE\n\n<memory_stores>/, "after the agent's own prompt")
  t.match(system, /- \/mnt\/memory\/team-notes \(read-write\): Team Notes: What the team learned\.\n {2}Instructions: Keep notes short\./)

  const listed = (await memories.list(store.id)).data as any[]
  t.same(
    listed.map((m) => m.path),
    ['/notes.md'],
  )
  const vs = (await versions.list(store.id)).data
  t.equal(vs.length, 1)
  t.match(vs[0], { operation: 'created', path: '/notes.md', created_by: { type: 'session_actor', session_id: one.id } })
  t.equal((await memories.retrieve(listed[0].id, { memory_store_id: store.id })).content, 'the build needs node 20\n')

  const two = await withStores([{ type: 'memory_store', memory_store_id: store.id, access: 'read_only' }])
  t.equal((two.resources[0] as any).access, 'read_only')
  s.model.enqueue(
    tool('bash', { command: 'cat /mnt/memory/team-notes/notes.md' }),
    tool('bash', { command: 'touch /mnt/memory/team-notes/other.md 2>&1; echo rc=$?' }),
    tool('write', { file_path: '/mnt/memory/team-notes/notes.md', content: 'overwritten' }),
    done,
  )
  const read = results(await step(two.id, [say('recall')]))
  t.match(text(read[0]), /the build needs node 20/, 'the second session reads what the first wrote')
  t.match(text(read[1]), /Read-only file system[\s\S]*rc=1/, 'bash cannot write a read_only mount')
  t.equal(read[2].is_error, true, 'nor can the write tool')
  t.equal((await versions.list(store.id)).data.length, 1, 'nothing stored from the read_only session')

  // The API changes the memory while the first session is idle: its next tool sees the change.
  await memories.update(listed[0].id, { memory_store_id: store.id, content: 'the build needs node 22\n' })
  await memories.create(store.id, { path: '/deep/er/fact.md', content: 'from the API' })
  s.model.enqueue(tool('bash', { command: 'cat /mnt/memory/team-notes/notes.md /mnt/memory/team-notes/deep/er/fact.md' }), done)
  const after = results(await step(one.id, [say('again')]))
  t.match(text(after[0]), /node 22\n[\s\S]*from the API/, 'API changes reach the mount before the next tool')

  // Renames, deletes, a file over 100 kB and a path the rules refuse, in one tool call.
  s.model.enqueue(
    tool('bash', {
      command: [
        'cd /mnt/memory/team-notes',
        'mv notes.md build.md',
        'rm -r deep',
        'head -c 150000 /dev/zero | tr "\\0" a > big.txt',
        "printf 'x' > \"$(printf 'bad\\001name')\"",
        'echo ok',
      ].join(' && '),
    }),
    tool('bash', { command: 'echo again > /mnt/memory/team-notes/again.md' }),
    done,
  )
  const changed = results(await step(one.id, [say('tidy')]))
  const note = text(changed[0])
  t.match(note, /Memory: not everything written under \/mnt\/memory was stored/)
  t.match(note, /\/mnt\/memory\/team-notes\/big\.txt: not stored: it is 150000 bytes; a memory holds at most 102400/)
  t.match(note, /bad.name: not stored: its path must not contain control characters/)
  t.notMatch(text(changed[1]), /not stored/, 'a refused file is said once, not after every tool')
  const now = ((await memories.list(store.id)).data as any[]).map((m) => [m.path, m.id])
  t.same(
    now.map(([p]) => p),
    ['/again.md', '/build.md'],
  )
  t.equal(now.find(([p]) => p === '/build.md')![1], listed[0].id, 'a move keeps the memory (one rename)')
  const ops = (await versions.list(store.id, { session_id: one.id } as any)).data.map((v: any) => `${v.operation} ${v.path}`)
  t.same(ops.sort(), ['created /again.md', 'created /notes.md', 'deleted /deep/er/fact.md', 'modified /build.md'].sort())

  // Two sessions writing one path: one version each, the last writer's content current.
  const three = await withStores([{ type: 'memory_store', memory_store_id: store.id }])
  s.model.enqueue(tool('write', { file_path: '/mnt/memory/team-notes/shared.md', content: 'from one' }), done)
  await step(one.id, [say('one')])
  s.model.enqueue(tool('write', { file_path: '/mnt/memory/team-notes/shared.md', content: 'from three' }), done)
  await step(three.id, [say('three')])
  const shared = ((await memories.list(store.id, { path_prefix: '/' })).data as any[]).find((m) => m.path === '/shared.md')
  t.equal((await memories.retrieve(shared.id, { memory_store_id: store.id })).content, 'from three')
  const sharedVersions = (await versions.list(store.id, { memory_id: shared.id })).data as any[]
  t.same(sharedVersions.map((v) => v.created_by.session_id).sort(), [one.id, three.id].sort(), 'one version each')

  // The list filter names the sessions that attached the store.
  const other = await sessions.create({ agent: agent.id, environment_id: env.id } as any)
  const ids = (await sessions.list({ memory_store_id: store.id } as any)).data.map((x) => x.id)
  t.same(ids.sort(), [one.id, two.id, three.id].sort())
  t.notOk(ids.includes(other.id))

  for (const x of [one, two, three]) await sessions.delete(x.id)
  await memoryStores.delete(store.id)
  t.pass('deleted once no session has it')
})

t.test('creation refuses what cannot be attached, naming the resource', isolated, async (t) => {
  const ok = await memoryStores.create({ name: 'ok' })
  const archived = await memoryStores.create({ name: 'old' })
  await memoryStores.archive(archived.id)
  const m = (id: string) => ({ type: 'memory_store', memory_store_id: id })
  const missing = await failure(withStores([m(ok.id), m('memstore_01JAAAAAAAAAAAAAAAAAAAAAAA')]))
  t.equal(missing.status, 404)
  t.match(missing.error.error.message, /^resources\[1\]\.memory_store_id: Memory store memstore_01JAAAAAAAAAAAAAAAAAAAAAAA not found/)
  const old = await failure(withStores([m(archived.id)]))
  t.equal(old.status, 400)
  t.match(old.error.error.message, /^resources\[0\]\.memory_store_id: Memory store .* is archived/)
  const many = await Promise.all(Array.from({ length: 9 }, (_, i) => memoryStores.create({ name: `s${i}` })))
  const nine = await failure(withStores(many.map((x) => m(x.id))))
  t.equal(nine.status, 400)
  t.match(nine.error.error.message, /^resources\[8\]: a session attaches at most 8 memory stores/)
  const twice = await failure(withStores([m(ok.id), m(ok.id)]))
  t.equal(twice.status, 400)
  t.match(twice.error.error.message, /^resources\[1\]\.memory_store_id: .* attached twice/)
  const bad = await failure(withStores([{ ...m(ok.id), access: 'write_only' }]))
  t.equal(bad.status, 400)
  const selfHosted = await environments.create({ name: 'sh', config: { type: 'self_hosted' } } as any)
  const remote = await failure(sessions.create({ agent: agent.id, environment_id: selfHosted.id, resources: [m(ok.id)] } as any))
  t.equal(remote.status, 422)
  t.match(remote.error.error.message, /^resources\[0\]: memory stores are mounted only .* is self_hosted/)
  // The refused creates attached nothing that stays: the store deletes at once.
  await memoryStores.delete(ok.id)
  t.pass('no refused create holds the store')
  // Two stores of one name get two mounts.
  const a = await memoryStores.create({ name: 'Same' })
  const b = await memoryStores.create({ name: 'same!' })
  const both = await withStores([m(a.id), m(b.id)])
  t.same(
    both.resources.map((r: any) => r.mount_path),
    ['/mnt/memory/same', '/mnt/memory/same-2'],
  )
})

t.test('a store of 1,000 memories is in place at the first tool; the next tool costs one index request', isolated, async (t) => {
  const store = await memoryStores.create({ name: 'Big' })
  const body = 'x'.repeat(1024)
  for (let i = 0; i < 1000; i += 50) {
    await Promise.all(Array.from({ length: 50 }, (_, j) => memories.create(store.id, { path: `/f${(i + j) % 20}/m${i + j}.md`, content: body })))
  }
  const session = await withStores([{ type: 'memory_store', memory_store_id: store.id, access: 'read_only' }])
  const count = tool('bash', { command: 'find /mnt/memory/big -type f | wc -l' })
  s.model.enqueue(count, count, done)
  const events = await step(session.id, [say('count')])
  const at = (e: any) => Date.parse(e.processed_at)
  const uses = events.filter((e) => e.type === 'agent.tool_use')
  const res = results(events)
  t.equal(text(res[0]).trim(), '1000', 'every memory a file at the first tool')
  t.equal(text(res[1]).trim(), '1000')
  const first = at(res[0]) - at(uses[0])
  const second = at(res[1]) - at(uses[1])
  // The same first tool of a session without stores: the sandbox's start and bash alone.
  const plain = await sessions.create({ agent: agent.id, environment_id: env.id } as any)
  s.model.enqueue(tool('bash', { command: 'true' }), done)
  const bare = await step(plain.id, [say('nothing')])
  const baseline = at(results(bare)[0]) - at(bare.find((e) => e.type === 'agent.tool_use'))
  t.comment(`1,000 memories of 1 KiB: first tool ${first} ms (a session without stores: ${baseline} ms); next tool ${second} ms`)
  await sessions.delete(session.id)
  await sessions.delete(plain.id)
})
