import { existsSync, lstatSync, mkdtempSync, readFileSync, readlinkSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { Objm } from '@nats-io/obj'
import { connect } from '@nats-io/transport-node'
import t from 'tap'
import { WorkspaceStore } from '../../actors/workdir/workspace/store.js'
import { decode } from '../../protocol/codec.js'
import { ObjectStores, objectChunkPrefix, objectMetaSubject, objectStream } from '../../protocol/subjects.js'
import { startFakeModelServer } from '../fakes/model-server.js'
import '../helpers/keepalive.js'
import { startNats } from '../helpers/nats.js'
import { sessionWorkdir } from '../helpers/sandbox-backend.js'
import { clientFor, startTroupe, type TroupeProcess } from '../helpers/troupe.js'
import { collect, isIdle, until } from './_helpers.js'

/**
 * A session's workspace survives its move to another host (hosts share no disk): saved to the store at the end of
 * each tool call, only what changed; restored on the new host before its first tool runs, with the model and the
 * client told what the move lost; bounded; removed with the session. Hosts here are one at a time on one NATS, each
 * with its own data directory, so the session always lives on the one that runs.
 */

const nats = await startNats()
const model = await startFakeModelServer()
const nc = await connect({ servers: nats.url })
t.teardown(async () => {
  await nc.close()
  await model.close()
  nats.stopNow()
})
const jsm = await jetstreamManager(nc)

const hosts: TroupeProcess[] = []
t.teardown(() => {
  for (const h of hosts) h.killNow()
})
async function host(dataDir: string, env: Record<string, string> = {}): Promise<TroupeProcess> {
  const p = await startTroupe({
    natsUrl: nats.url,
    env: { TROUPE_DATA_DIR: dataDir, TROUPE_MODEL_BASE_URL: model.url, ANTHROPIC_API_KEY: 'k', TROUPE_MODEL_RETRY_BASE_MS: '20', ...env },
  })
  hosts.push(p)
  return p
}
const dir = () => mkdtempSync(path.join(os.tmpdir(), 'troupe-ws-'))

const TOOLSET = [{ type: 'agent_toolset_20260401' }]
const textOf = (ev: any) => (ev.content as any[]).map((c) => c.text).join('\n')

/** One turn on `url` in which the model runs each bash command in turn; the turn's events. */
async function bash(url: string, session: string, ...commands: string[]) {
  const client = clientFor(url, { maxRetries: 8 })
  model.enqueue(...commands.map((command) => ({ steps: [{ type: 'tool_use' as const, name: 'bash', input: { command } }] })), {
    steps: [{ type: 'text', text: 'done' }],
  })
  const stream = await client.beta.sessions.events.stream(session)
  await client.beta.sessions.events.send(session, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'go' }] }] } as any)
  return collect(stream, isIdle, 60_000)
}
const results = (events: any[]) => events.filter((e) => e.type === 'agent.tool_result')

const store = new WorkspaceStore(jetstream(nc), jsm, await new Objm(jetstream(nc)).create(ObjectStores.workspaces))
async function manifest(session: string): Promise<{ gen: number; entries: Map<string, any> } | undefined> {
  const m = await store.manifest(session)
  if (!m) return undefined
  const d = decode<{ gen: number; entries: Array<[string, any]> }>(m.bytes!)
  return { gen: d.gen, entries: new Map(d.entries) }
}
/** The session's blob subjects in the store, with their message counts. */
async function blobs(session: string): Promise<string[]> {
  const si = await jsm.streams.info(objectStream(ObjectStores.workspaces), { subjects_filter: `${objectChunkPrefix(ObjectStores.workspaces)}${session}.>` })
  return Object.keys(si.state.subjects ?? {})
}

async function newSession(url: string): Promise<string> {
  const client = clientFor(url, { maxRetries: 8 })
  const a = await client.beta.agents.create({ name: 'ws', model: 'claude-sonnet-4-5', tools: TOOLSET } as any)
  const e = await client.beta.environments.create({ name: 'ws' })
  return (await client.beta.sessions.create({ agent: a.id, environment_id: e.id } as any)).id
}

const dirA = dir()
const dirB = dir()

t.test('a move keeps the workspace: saved after each tool call, only what changed, restored on the next host', async (t) => {
  let a = await host(dirA)
  const session = await newSession(a.url)
  const first = await bash(
    a.url,
    session,
    'mkdir -p src/deep && echo one > src/a.txt && echo two > src/deep/b.txt && printf "#!/bin/sh\\necho run\\n" > run.sh && chmod 755 run.sh && mkdir empty && ln -s /etc/passwd pw && ln -s src link && head -c 300000 /dev/urandom > big.bin && echo keep > keep.txt',
  )
  t.notOk(results(first)[0].is_error, textOf(results(first)[0]))
  const m1 = await manifest(session)
  t.ok(m1, 'a manifest is stored after the tool call')
  t.same(m1!.entries.get('pw'), { t: 'l', target: '/etc/passwd' }, 'a link is stored as a link, never followed')
  t.same(m1!.entries.get('link'), { t: 'l', target: 'src' })
  t.match(m1!.entries.get('run.sh'), { t: 'f', mode: 0o755, size: 19 })
  t.match(m1!.entries.get('empty'), { t: 'd' })
  t.match(m1!.entries.get('big.bin'), { t: 'f', size: 300000 })
  const files = [...m1!.entries.values()].filter((e) => e.t === 'f')
  t.equal((await blobs(session)).length, files.length + 1, 'one blob per file, and the manifest')
  const wsA = sessionWorkdir(dirA, session).host
  const bigBefore = readFileSync(path.join(wsA, 'big.bin'))

  // Only what changed is uploaded; what went is removed from the store.
  await bash(a.url, session, 'echo changed > src/a.txt && rm keep.txt')
  const m2 = await manifest(session)
  t.equal(m2!.gen, m1!.gen + 1)
  t.notOk(m2!.entries.has('keep.txt'), 'the removed file is out of the manifest')
  t.not(m2!.entries.get('src/a.txt').blob.id, m1!.entries.get('src/a.txt').blob.id, 'the changed file has a new blob')
  t.match(m2!.entries.get('src/a.txt').blob.id, new RegExp(`^${m2!.gen}-`), 'named for the generation that saved it')
  t.equal(m2!.entries.get('big.bin').blob.id, m1!.entries.get('big.bin').blob.id, 'the unchanged file keeps its blob')
  const live = await blobs(session)
  t.equal(live.length, files.length, "the removed file's blob and the old manifest are gone; one new manifest")
  t.notOk(
    live.some((s) => s.endsWith(m1!.entries.get('keep.txt').blob.id)),
    'the blob of the removed file is purged',
  )
  // A tool call that changes nothing writes nothing.
  await bash(a.url, session, 'cat src/a.txt')
  t.equal((await manifest(session))!.gen, m2!.gen, 'no save without a change')

  // The host dies (here with the blobs of a save it never committed, as a host killed midway leaves them); another,
  // with a disk of its own, takes the session over.
  await a.kill()
  const leftover = await store.putBlob(session, m2!.gen + 1, [Buffer.from('a save that never committed')])
  const later = await store.putBlob(session, m2!.gen + 5, [Buffer.from("another host's save in progress")])
  const b = await host(dirB)
  const moved = await bash(
    b.url,
    session,
    'cat src/a.txt src/deep/b.txt; ./run.sh; readlink pw link; ls -A; test -f keep.txt || echo no-keep; cat /etc/passwd >/dev/null; echo new > new.txt',
  )
  const out = results(moved)[0]
  t.notOk(out.is_error)
  const text = textOf(out)
  t.match(text, /changed\ntwo\nrun\n\/etc\/passwd\nsrc\n/, 'files, modes and links are back')
  t.match(text, /no-keep/, 'what was removed before the move stays removed')
  t.match(text, /\[workspace\] This session moved to another host since its last tool call/, 'the model is told what the move lost')
  t.match(text, /everything under \/tmp/)
  const errors = moved.filter((e) => e.type === 'session.error')
  t.equal(errors.length, 1, 'and the client, once')
  t.match(errors[0].error, { type: 'unknown_error', retry_status: { type: 'retrying' } })
  const hostB = sessionWorkdir(dirB, session).host
  t.ok(readFileSync(path.join(hostB, 'big.bin')).equals(bigBefore), 'binary bytes come back exactly')
  t.equal(lstatSync(path.join(hostB, 'run.sh')).mode & 0o777, 0o755)
  t.equal(readlinkSync(path.join(hostB, 'pw')), '/etc/passwd')
  t.ok(lstatSync(path.join(hostB, 'empty')).isDirectory(), 'an empty directory too')
  if (process.geteuid?.() === 0) t.equal(lstatSync(path.join(hostB, 'src/a.txt')).uid, lstatSync(hostB).uid, "restored files belong to the workspace's owner")

  const after = await blobs(session)
  t.notOk(
    after.some((s) => s.endsWith(leftover.id)),
    "the first save of the new activation removes what a dead host's save of that generation left",
  )
  t.ok(
    after.some((s) => s.endsWith(later.id)),
    'but never a blob of a later generation',
  )
  await store.dropBlobs(session, [later.id])
  const again = await bash(b.url, session, 'echo second > second.txt')
  t.notMatch(textOf(results(again)[0]), /moved/, 'told once')
  t.equal(again.filter((e) => e.type === 'session.error').length, 0)

  // Back to the first host's disk, which holds an older copy: it is brought up to date, not kept.
  await b.kill()
  a = await host(dirA)
  const back = await bash(a.url, session, 'cat new.txt second.txt src/a.txt')
  t.match(textOf(results(back)[0]), /^new\nsecond\nchanged\n/)
  t.match(textOf(results(back)[0]), /moved to another host/)
  await a.stop()
})

t.test('past the bounds the workspace is no longer saved, and the model is told once what a move would lose', async (t) => {
  const a = await host(dir(), { TROUPE_WORKSPACE_MAX_FILES: '20' })
  const session = await newSession(a.url)
  await bash(a.url, session, 'echo kept > kept.txt')
  const saved = await manifest(session)
  const over = await bash(a.url, session, 'mkdir many && for i in $(seq 1 30); do echo $i > many/$i; done', 'echo more > more.txt')
  const [first, second] = results(over)
  t.match(textOf(first), /\[workspace\] The workspace holds more than 20 files, directories and links \(TROUPE_WORKSPACE_MAX_FILES\), past what is saved/)
  t.notMatch(textOf(second), /\[workspace\]/, 'said once')
  t.equal(over.filter((e) => e.type === 'session.error').length, 1)
  t.equal((await manifest(session))!.gen, saved!.gen, 'nothing saved past the bound')
  const back = await bash(a.url, session, 'rm -r many')
  t.notMatch(textOf(results(back)[0]), /\[workspace\]/)
  const m = await manifest(session)
  t.ok(m!.entries.has('more.txt'), 'back within the bound, it is saved again')
  await a.stop()
})

// The last two tests share one host (default settings, a data directory of its own), started once for both.
let shared: { data: string; a: TroupeProcess } | undefined
async function sharedHost() {
  if (!shared) {
    const data = dir()
    shared = { data, a: await host(data) }
  }
  return shared
}

t.test('deleting the session removes its workspace from the store', async (t) => {
  const { data, a } = await sharedHost()
  const session = await newSession(a.url)
  await bash(a.url, session, 'echo x > x.txt && mkdir d && echo y > d/y')
  t.ok(existsSync(path.join(data, 'sessions', `${session}.workspace-gen`)), 'the marker says which save the directory holds')
  t.ok(await manifest(session))
  t.ok((await blobs(session)).length > 0)
  await clientFor(a.url, { maxRetries: 8 }).beta.sessions.delete(session)
  t.same(await blobs(session), [], 'no blob left')
  const meta = await jsm.streams
    .getMessage(objectStream(ObjectStores.workspaces), { last_by_subj: objectMetaSubject(ObjectStores.workspaces, session) })
    .catch(() => null)
  t.equal(meta, null, 'no manifest, not even a tombstone')
  t.notOk(existsSync(path.join(data, 'sessions', `${session}.workspace-gen`)), 'the marker is gone')
})

t.test('an interrupted tool call is saved too: what it wrote before the interrupt survives a move', async (t) => {
  const { data, a } = await sharedHost()
  const session = await newSession(a.url)
  const client = clientFor(a.url, { maxRetries: 8 })
  model.enqueue({ steps: [{ type: 'tool_use', name: 'bash', input: { command: 'echo before > int.txt && sleep 30' } }] })
  const stream = await client.beta.sessions.events.stream(session)
  await client.beta.sessions.events.send(session, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'go' }] }] } as any)
  const file = path.join(sessionWorkdir(data, session).host, 'int.txt')
  await until('the command wrote its file', () => existsSync(file))
  await client.beta.sessions.events.send(session, { events: [{ type: 'user.interrupt' }] } as any)
  const events = await collect(stream, isIdle, 30_000)
  t.match(textOf(results(events)[0]), /interrupted/)
  t.match((await manifest(session))?.entries.get('int.txt'), { t: 'f', size: 7 }, 'saved at the end of the interrupted call')
  await a.stop()
})
