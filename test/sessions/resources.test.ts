import { existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { toFile } from '@anthropic-ai/sdk'
import t from 'tap'
import { idFromKey } from '../../protocol/ids.js'
import { raw } from '../helpers/troupe.js'
import { agentAndEnv, collect, failure, isError, isIdle, sessionStack } from './_helpers.js'

/**
 * Session file resources (WIRE §9, SPEC "Session resource inputs"), through the official client: each attached file
 * an independent session-scoped copy, the resources routes, what is refused and what a refusal leaves, retries that
 * make no second copy. Tools run on the local backend here: the files in the session directory's uploads/, the model
 * told where (test/sandbox/resources.test.ts has the isolated backend's read-only mount).
 */

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'troupe-resources-'))
const s = await sessionStack({ TROUPE_DATA_DIR: dataDir, TROUPE_SANDBOX: 'local' })
const sessions = s.client.beta.sessions
const files = s.client.beta.files
const UP = '/mnt/session/uploads'

const upload = async (text: string | Uint8Array, name = 'notes.txt') => files.upload({ file: await toFile(Buffer.from(text), name, { type: 'text/plain' }) })
const download = async (id: string) => Buffer.from(await (await files.download(id)).arrayBuffer())
const scoped = async (sessionId: string) => {
  const all = []
  for await (const f of files.list({ scope_id: sessionId } as any)) all.push(f)
  return all
}
const listed = async (sessionId: string) => {
  const all = []
  for await (const r of sessions.resources.list(sessionId, { limit: 2 } as any)) all.push(r)
  return all
}

const { agent, env } = await agentAndEnv(s.client, { tools: [{ type: 'agent_toolset_20260401' }] })
const create = (body: Record<string, unknown>, opts?: Record<string, unknown>) =>
  sessions.create({ agent: agent.id, environment_id: env.id, ...body } as any, opts as any)

t.test('create with file resources: each a copy scoped to the session, at its default or given mount path', async (t) => {
  const a = await upload('alpha bytes\n', 'a.txt')
  const b = await upload('beta bytes\n', 'b.txt')
  const session = await create({
    resources: [
      { type: 'file', file_id: a.id },
      { type: 'file', file_id: b.id, mount_path: `${UP}/data/beta.txt` },
    ],
  })
  t.equal(session.resources.length, 2)
  const [ra, rb] = session.resources as any[]
  t.match(ra, { type: 'file', file_id: a.id, mount_path: `${UP}/${a.id}`, created_at: session.created_at, updated_at: session.created_at })
  t.match(rb, { type: 'file', file_id: b.id, mount_path: `${UP}/data/beta.txt` })
  t.match(ra.id, /^sesrsc_/)
  t.not(ra.id, rb.id)
  t.same(Object.keys(ra).sort(), ['created_at', 'file_id', 'id', 'mount_path', 'type', 'updated_at'], 'the WIRE shape, nothing else')

  t.same((await sessions.retrieve(session.id)).resources, session.resources, 'GET shows them')
  t.same(await listed(session.id), session.resources, 'listed in order, across pages')
  t.same(await sessions.resources.retrieve(rb.id, { session_id: session.id }), rb)

  const copies = await scoped(session.id)
  t.equal(copies.length, 2, 'GET /v1/files?scope_id lists the two copies')
  for (const c of copies) {
    t.match(c.id, /^file_/)
    t.notOk([a.id, b.id].includes(c.id), 'a copy has an id of its own')
    t.same(c.scope, { type: 'session', id: session.id })
    t.equal(c.downloadable, true)
  }
  const byName = Object.fromEntries(copies.map((c) => [c.filename, c]))
  t.match(byName['a.txt'], { mime_type: 'text/plain', size_bytes: a.size_bytes })
  t.equal((await download(byName['b.txt']!.id)).toString(), 'beta bytes\n', 'the copy has the bytes')

  // Deleting the original keeps the copy, the resource and what a tool reads.
  await files.delete(a.id)
  t.equal((await download(byName['a.txt']!.id)).toString(), 'alpha bytes\n')
  t.same((await sessions.retrieve(session.id)).resources, session.resources)

  // Local backend: the files are in the session directory's uploads/, and the model is told where.
  s.model.enqueue({ steps: [{ type: 'tool_use', name: 'bash', input: { command: `cat uploads/${a.id} uploads/data/beta.txt` } }] }, {})
  const before = s.model.requests.length
  const stream = await sessions.events.stream(session.id)
  await sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'read' }] }] } as any)
  const events = await collect(stream, isIdle)
  const root = path.join(dataDir, 'sessions', session.id)
  const result = events.find((e) => e.type === 'agent.tool_result')
  t.equal(result.content[0].text, 'alpha bytes\nbeta bytes', 'each file at its mount path, beneath the session directory')
  t.equal(readFileSync(path.join(root, 'uploads', a.id), 'utf8'), 'alpha bytes\n')
  t.equal(readFileSync(path.join(root, 'uploads', 'data', 'beta.txt'), 'utf8'), 'beta bytes\n')
  t.equal(statSync(path.join(root, 'uploads', a.id)).mode & 0o777, 0o444, 'written read-only')
  const system = s.model.requests[before]!.body.system as string
  t.match(system, `${UP}/data/beta.txt: ${path.join(root, 'uploads', 'data', 'beta.txt')}`)
})

t.test('add, get, list and delete resources of an idle session', async (t) => {
  const session = await create({})
  t.same(session.resources, [])
  const f = await upload('added\n', 'added.txt')
  const added = await sessions.resources.add(session.id, { type: 'file', file_id: f.id })
  t.match(added, { type: 'file', file_id: f.id, mount_path: `${UP}/${f.id}` })
  t.match(added.id, /^sesrsc_/)
  t.ok(Date.parse(added.created_at) >= Date.parse(session.created_at))
  const nested = await sessions.resources.add(session.id, { type: 'file', file_id: f.id, mount_path: `${UP}/deep/er/copy.txt` })
  t.same(await listed(session.id), [added, nested])
  t.same((await sessions.retrieve(session.id)).resources, [added, nested])
  t.equal((await scoped(session.id)).length, 2, 'one copy per resource, even of the same file')

  // The next tool sees both; a deleted one's file is gone before the tool after its delete.
  const root = path.join(dataDir, 'sessions', session.id)
  const turn = async () => {
    s.model.enqueue({ steps: [{ type: 'tool_use', name: 'bash', input: { command: 'true' } }] }, {})
    const stream = await sessions.events.stream(session.id)
    await sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'go' }] }] } as any)
    await collect(stream, isIdle)
  }
  await turn()
  t.ok(existsSync(path.join(root, 'uploads', f.id)))
  t.equal(readFileSync(path.join(root, 'uploads', 'deep', 'er', 'copy.txt'), 'utf8'), 'added\n')

  t.same(await sessions.resources.delete(nested.id, { session_id: session.id }), { id: nested.id, type: 'session_resource_deleted' })
  t.same(await listed(session.id), [added])
  t.equal((await scoped(session.id)).length, 1, "the deleted resource's copy goes")
  isError(t, await failure(sessions.resources.retrieve(nested.id, { session_id: session.id })), 404, 'not_found_error', /sesrsc_/, 'session_resource_not_found')
  isError(t, await failure(sessions.resources.delete(nested.id, { session_id: session.id })), 404, 'not_found_error', /sesrsc_/)
  await turn()
  t.notOk(existsSync(path.join(root, 'uploads', 'deep')), 'its file and emptied directories are gone')
  t.ok(existsSync(path.join(root, 'uploads', f.id)), 'the other stays')

  // A path freed by a delete may be used again, and a file may take the place of a directory that held one.
  const again = await sessions.resources.add(session.id, { type: 'file', file_id: f.id, mount_path: `${UP}/deep` })
  await turn()
  t.equal(readFileSync(path.join(root, 'uploads', 'deep'), 'utf8'), 'added\n')

  // Session delete takes the copies with it.
  await sessions.delete(session.id)
  t.same(await scoped(session.id), [])
  isError(t, await failure(sessions.resources.list(session.id)), 404, 'not_found_error', /Session/, 'session_not_found')
  t.ok(again.id)
})

t.test('a retried create (same Idempotency-Key) and a retried add make no second copy', async (t) => {
  const f = await upload('once\n', 'once.txt')
  const body = {
    resources: [
      { type: 'file', file_id: f.id },
      { type: 'file', file_id: f.id, mount_path: `${UP}/second` },
    ],
  }
  const opts = { headers: { 'Idempotency-Key': `create-${f.id}` } }
  const first = await create(body, opts)
  const second = await create(body, opts)
  t.equal(second.id, first.id)
  t.same(second.resources, first.resources)
  t.equal((await scoped(first.id)).length, 2, 'two resources, two copies: none made twice')

  const addOpts = { headers: { 'Idempotency-Key': `add-${f.id}` } }
  const added = await sessions.resources.add(first.id, { type: 'file', file_id: f.id, mount_path: `${UP}/third` }, addOpts as any)
  const repeated = await sessions.resources.add(first.id, { type: 'file', file_id: f.id, mount_path: `${UP}/third` }, addOpts as any)
  t.same(repeated, added)
  t.equal((await listed(first.id)).length, 3)
  t.equal((await scoped(first.id)).length, 3)
  // A page's cursor is bound to its session.
  const page = await raw(s.url, 'GET', `/v1/sessions/${first.id}/resources?limit=2`)
  t.equal(page.json.data.length, 2)
  const other = await create({})
  const crossed = await raw(s.url, 'GET', `/v1/sessions/${other.id}/resources?limit=2&page=${page.json.next_page}`)
  t.equal(crossed.status, 400)
  t.equal(crossed.json.error.details?.error_code, 'cursor_filter_mismatch')
  const reused = await failure(sessions.resources.add(first.id, { type: 'file', file_id: f.id, mount_path: `${UP}/fourth` }, addOpts as any))
  isError(t, reused, 422, 'invalid_request_error', /Idempotency-Key/, 'idempotency_key_reused')
})

t.test('bad resources at create: a 4xx naming the field, and nothing left behind', async (t) => {
  const f = await upload('x')
  const file = (extra: Record<string, unknown> = {}) => ({ type: 'file', file_id: f.id, ...extra })
  const cases: Array<[unknown[], number, RegExp, string?]> = [
    [[{ type: 'file', file_id: 'nope' }], 400, /resources\[0\]\.file_id must be an id like file_01/],
    [[{ type: 'file' }], 400, /resources\[0\]\.file_id must be/],
    [[file({ extra: 1 })], 400, /resources\[0\]\.extra is not a known field/],
    [[file({ mount_path: 'relative/x' })], 400, /resources\[0\]\.mount_path must be an absolute path strictly beneath \/mnt\/session\/uploads\//],
    [[file({ mount_path: '/tmp/x' })], 400, /resources\[0\]\.mount_path must be an absolute path strictly beneath/],
    [[file({ mount_path: UP })], 400, /resources\[0\]\.mount_path must be an absolute path strictly beneath/],
    [[file({ mount_path: `${UP}/` })], 400, /resources\[0\]\.mount_path must be a normalised path/],
    [[file({ mount_path: `${UP}/a/../../../etc/passwd` })], 400, /resources\[0\]\.mount_path must be a normalised path/],
    [[file({ mount_path: `${UP}/./a` })], 400, /mount_path must be a normalised path/],
    [[file({ mount_path: `${UP}//a` })], 400, /mount_path must be a normalised path/],
    [[file({ mount_path: `${UP}/a/` })], 400, /mount_path must be a normalised path/],
    [[file({ mount_path: `${UP}/a\u0000b` })], 400, /mount_path must be a path without control characters/],
    [[file({ mount_path: `${UP}/${'x'.repeat(256)}` })], 400, /mount_path must be a path whose segments are at most 255 bytes/],
    [[file({ mount_path: `${UP}/${'x/'.repeat(600)}x` })], 400, /mount_path must be at most 1024 characters/],
    [[file({ mount_path: 7 })], 400, /resources\[0\]\.mount_path must be a string or null/],
    [[file(), file()], 400, /resources\[1\]\.mount_path: \/mnt\/session\/uploads\/file_\w+ overlaps the mount path of resources\[0\]/],
    [
      [file({ mount_path: `${UP}/a` }), file({ mount_path: `${UP}/a/b` })],
      400,
      /resources\[1\]\.mount_path: .* overlaps .* resources\[0\] \(\/mnt\/session\/uploads\/a\)/,
    ],
    [[file({ mount_path: `${UP}/a/b` }), file({ mount_path: `${UP}/a` })], 400, /resources\[1\]\.mount_path/],
    [[file(), { type: 'file', file_id: 'file_01NOSUCHFILE' }], 404, /^resources\[1\]\.file_id: File file_01NOSUCHFILE not found/, 'file_not_found'],
    // Memory stores are checked whole (their attach and mounts: test/memory/sessions.test.ts).
    [[{ type: 'memory_store', memory_store_id: 'memstore_01ABC', access: 'sometimes' }], 400, /^resources\[0\]\.access must be/],
    [
      [{ type: 'github_repository', url: 'https://github.com/o/r' }],
      422,
      /resources\[0\]: github_repository resources are not supported on sessions/,
      'resource_unsupported',
    ],
  ]
  for (const [i, [resources, status, names, code]] of cases.entries()) {
    const key = `bad-${i}-${f.id}`
    const err = await failure(create({ resources }, { headers: { 'Idempotency-Key': key } }))
    isError(t, err, status, status === 404 ? 'not_found_error' : 'invalid_request_error', names, code)
    // The session it would have been: never created, and no copy of its resources left.
    const id = idFromKey('sesn', 'sessions.create', key)
    t.equal((await failure(sessions.retrieve(id))).status, 404)
    t.same(await scoped(id), [], `${i}: no copy left`)
  }
  t.equal((await files.retrieveMetadata(f.id)).id, f.id, 'the original is untouched')
})

t.test('bad adds and bad resource ids', async (t) => {
  const f = await upload('y')
  const session = await create({ resources: [{ type: 'file', file_id: f.id, mount_path: `${UP}/dir/y` }] })
  const rid = (session.resources[0] as any).id as string
  const add = (body: Record<string, unknown>) => sessions.resources.add(session.id, body as any)
  isError(t, await failure(add({ type: 'file', file_id: 'file_01NOSUCH' })), 404, 'not_found_error', /^file_id: File file_01NOSUCH not found/, 'file_not_found')
  isError(
    t,
    await failure(add({ type: 'file', file_id: f.id, mount_path: `${UP}/dir` })),
    400,
    'invalid_request_error',
    new RegExp(`^mount_path: .* overlaps the mount path of ${rid}`),
  )
  isError(t, await failure(add({ type: 'file', file_id: f.id, mount_path: `${UP}/dir/y` })), 400, 'invalid_request_error', /^mount_path: /)
  isError(t, await failure(add({ type: 'file', file_id: f.id, mount_path: '/etc/x' })), 400, 'invalid_request_error', /^mount_path must be an absolute path/)
  isError(
    t,
    await failure(add({ type: 'memory_store', memory_store_id: 'memstore_01A' })),
    400,
    'invalid_request_error',
    /^type must be "file" \(only files can be added to a session\) \(was "memory_store"\)/,
  )
  isError(t, await failure(add({ file_id: f.id })), 400, 'invalid_request_error', /^type must be "file" .*\(was missing\)/)
  t.equal((await scoped(session.id)).length, 1, 'no refused add left a copy')

  // Path ids: the wrong prefix is a 404 from the router; a well-formed unknown one from the session.
  const bad = await raw(s.url, 'GET', `/v1/sessions/${session.id}/resources/file_01ABC`)
  t.equal(bad.status, 404)
  t.match(bad.json.error.message, /^Session resource file_01ABC not found/)
  const badSession = await raw(s.url, 'GET', `/v1/sessions/sesrsc_01ABC/resources/${rid}`)
  t.equal(badSession.status, 404)
  t.match(badSession.json.error.message, /^Session sesrsc_01ABC not found/)
  isError(
    t,
    await failure(sessions.resources.retrieve('sesrsc_01NOSUCH', { session_id: session.id })),
    404,
    'not_found_error',
    /sesrsc_01NOSUCH not found in session/,
  )
  isError(t, await failure(sessions.resources.retrieve(rid, { session_id: 'sesn_01NOSUCH' })), 404, 'not_found_error', /Session sesn_01NOSUCH not found/)
  // A token rotation is for GitHub repositories.
  const rotated = await failure(sessions.resources.update(rid, { session_id: session.id, authorization_token: 'ghp_x' }))
  isError(t, rotated, 400, 'invalid_request_error', /^authorization_token: only github_repository resources take a token/)
  const page = await raw(s.url, 'GET', `/v1/sessions/${session.id}/resources?limit=0`)
  t.equal(page.status, 400)
  t.match(page.json.error.message, /limit/)
})

t.test('adds and deletes only while the session is idle; archived sessions refuse them', async (t) => {
  const f = await upload('z')
  const session = await create({ resources: [{ type: 'file', file_id: f.id }] })
  const rid = (session.resources[0] as any).id as string
  const stream = await sessions.events.stream(session.id)
  const before = s.model.requests.length
  s.model.enqueue({ hang: true })
  await sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'hang' }] }] } as any)
  await s.model.waitForRequests(before + 1)
  const running = await failure(sessions.resources.add(session.id, { type: 'file', file_id: f.id, mount_path: `${UP}/later` }))
  isError(t, running, 409, 'conflict_error', /is running; its resources change only while it is idle/, 'session_busy_resources')
  isError(t, await failure(sessions.resources.delete(rid, { session_id: session.id })), 409, 'conflict_error', /is running/, 'session_busy_resources')
  t.same(await listed(session.id), session.resources, 'reads still answer')
  await sessions.events.send(session.id, { events: [{ type: 'user.interrupt' }] } as any)
  await collect(stream, isIdle)
  t.equal((await scoped(session.id)).length, 1, 'the refused add left no copy')

  await sessions.archive(session.id)
  isError(
    t,
    await failure(sessions.resources.add(session.id, { type: 'file', file_id: f.id, mount_path: `${UP}/later` })),
    409,
    'conflict_error',
    /archived/,
    'session_archived',
  )
  isError(t, await failure(sessions.resources.delete(rid, { session_id: session.id })), 409, 'conflict_error', /archived/, 'session_archived')
  t.same(await listed(session.id), session.resources)
})
