import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { connect } from '@nats-io/transport-node'
import t from 'tap'
import { decode, encode } from '../../protocol/codec.js'
import { sandboxSubject } from '../../protocol/subjects.js'
import type { StatusReport } from '../../supervisor/inspect/status/index.js'
import { startFakeModelServer } from '../fakes/model-server.js'
import '../helpers/keepalive.js'
import { startNats } from '../helpers/nats.js'
import { pidsOf } from '../helpers/procs.js'
import { sessionWorkdir } from '../helpers/sandbox-backend.js'
import { asUserRuns, clientFor, startTroupe, type TroupeProcess } from '../helpers/troupe.js'
import { until } from '../helpers/wait.js'
import { agentAndEnv, collect, isIdle } from '../sessions/_helpers.js'

/**
 * Sandbox hosts (`troupe sandbox`): a `serve` host with TROUPE_SANDBOX_PLACEMENT=remote runs no sandbox of its own;
 * its sessions' tools run on the sandbox hosts over NATS, interrupts included; a sandbox host that dies is replaced
 * at the next tool with the workspace restored; an actor host that dies leaves nothing running there; calls of an
 * earlier activation are refused once a later one called.
 */

const nats = await startNats()
const model = await startFakeModelServer()
const procs: TroupeProcess[] = []
t.teardown(() => {
  for (const p of procs) p.killNow()
  nats.stopNow()
  return model.close()
})
const BIN = fileURLToPath(new URL('../../bin/troupe.mjs', import.meta.url))
const dir = (name: string) => mkdtempSync(path.join(os.tmpdir(), `troupe-remote-${name}-`))
const serveDir = dir('serve')
const serve = await startTroupe({
  natsUrl: nats.url,
  env: {
    TROUPE_MODEL_BASE_URL: model.url,
    ANTHROPIC_API_KEY: 'fake-key',
    TROUPE_MODEL_RETRY_BASE_MS: '20',
    TROUPE_DATA_DIR: serveDir,
    TROUPE_SANDBOX_PLACEMENT: 'remote',
  },
})
procs.push(serve)
const client = clientFor(serve.url, { maxRetries: 3 })

const sandboxDirs: string[] = []
async function sandboxHost(): Promise<TroupeProcess> {
  const d = dir('sbx')
  sandboxDirs.push(d)
  const p = await startTroupe({ role: 'sandbox', natsUrl: nats.url, env: { TROUPE_DATA_DIR: d } })
  procs.push(p)
  return p
}

const say = (text: string) => ({ type: 'user.message', content: [{ type: 'text', text }] })
const textOf = (ev: any) => (ev.content as any[]).map((c) => c.text).join('')
const results = (events: any[]) => events.filter((e) => e.type === 'agent.tool_result')

async function newSession() {
  const { agent, env } = await agentAndEnv(client, { tools: [{ type: 'agent_toolset_20260401' }] })
  return client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
}

/** One turn running `commands` as bash tool calls in order; the tool results. */
async function bash(id: string, ...commands: string[]) {
  model.enqueue(...commands.map((command) => ({ steps: [{ type: 'tool_use' as const, name: 'bash', input: { command } }] })), {})
  const stream = await client.beta.sessions.events.stream(id)
  await client.beta.sessions.events.send(id, { events: [say('go')] } as any)
  return results(await collect(stream, isIdle, 30_000))
}

/** The sandbox host data directory holding the session's workspace. */
const holder = (id: string) => sandboxDirs.find((d) => existsSync(path.join(d, 'sessions', id)))

t.test('with no sandbox host running, a tool is answered with an error that says so', async (t) => {
  const session = await newSession()
  const [r] = await bash(session.id, 'echo hi')
  t.equal(r.is_error, true)
  t.match(textOf(r), /No sandbox host is running/)
})

const hosts: TroupeProcess[] = []
// In a subtest: tap ends a file whose root has nothing queued while the top level awaits.
t.test('two sandbox hosts start and say what they are', async (t) => {
  hosts.push(await sandboxHost(), await sandboxHost())
  t.match(hosts[0]!.stdout(), /sandbox\s+\w+ .*runs the sandboxes of sessions served elsewhere/, 'the start-up block says what it is')
  t.match(serve.stdout(), /sandbox\s+remote: on the sandbox hosts/)
  const status = async () => {
    const env = { ...process.env, NATS_URL: nats.url }
    const [cmd, ...args] = asUserRuns([process.execPath, BIN, 'status', '--json'], env)
    const out = execFileSync(cmd!, args, { env, encoding: 'utf8' })
    return JSON.parse(out) as StatusReport
  }
  const seen = await until('troupe status lists both sandbox hosts', async () => {
    const r = await status()
    return r.sandbox_hosts.filter((h) => !h.stale).length === 2 && r
  })
  t.match(seen.sandbox_hosts[0], { id: /^host_/, kind: /local|isolated/, data_dir: sandboxDirs[0] })
  t.equal(seen.hosts.length, 1, 'the sandbox hosts are not actor hosts')
})

t.test('tools run on a sandbox host, in one shell that persists; nothing runs on the serve host', async (t) => {
  const session = await newSession()
  const [a, b] = await bash(session.id, 'echo hi > f.txt && export X=7 && pwd', 'cat f.txt && echo "x=$X"')
  t.notOk(a.is_error, textOf(a))
  const at = holder(session.id)
  t.ok(at, 'the session directory is on a sandbox host')
  t.equal(textOf(a).trim(), sessionWorkdir(at!, session.id).inside)
  t.equal(readFileSync(path.join(sessionWorkdir(at!, session.id).host, 'f.txt'), 'utf8'), 'hi\n')
  t.match(textOf(b), /hi\s+x=7/, 'the same shell on the same host')
  t.notOk(existsSync(path.join(serveDir, 'sessions', session.id)), 'the serve host has no directory for it')
})

t.test('user.interrupt reaches the sandbox host: the command and its children die within a second', async (t) => {
  const session = await newSession()
  const tag = process.pid % 1000
  const [fg, bg] = [`sleep 1010.${tag}`, `sleep 1011.${tag}`]
  model.enqueue({ steps: [{ type: 'tool_use', name: 'bash', input: { command: `bash -c '${bg} & ${fg}'` } }] })
  const stream = await client.beta.sessions.events.stream(session.id)
  await client.beta.sessions.events.send(session.id, { events: [say('sleep')] } as any)
  const waiting = collect(stream, isIdle, 30_000)
  await until('both sleeps run', () => pidsOf(fg).length && pidsOf(bg).length)
  const sent = Date.now()
  await client.beta.sessions.events.send(session.id, { events: [{ type: 'user.interrupt' }] } as any)
  await until('the command is gone', () => !pidsOf(fg).length, 1000, 10).catch(() => undefined)
  t.equal(pidsOf(fg).length, 0, 'the command is gone within a second')
  await until('its child is gone', () => !pidsOf(bg).length, Math.max(0, 1000 - (Date.now() - sent)), 10).catch(() => undefined)
  t.equal(pidsOf(bg).length, 0, 'its background child too')
  t.match(textOf(results(await waiting)[0]), /interrupted/)
})

t.test('a sandbox host refuses an earlier activation once a later one called, and says which refusal', async (t) => {
  const nc = await connect({ servers: nats.url })
  t.teardown(() => nc.close())
  const host = /host\s+(host_\w+)/.exec(hosts[0]!.stdout())?.[1]
  t.ok(host, 'the sandbox host names itself')
  const session = 'sesn_01FENCETEST0000000000000'
  const spec = { network: { type: 'unrestricted' }, packages: { apt: [], cargo: [], gem: [], go: [], npm: [], pip: [] }, resources: [] }
  const ask = async (op: 'prepare' | 'close', fence: number) =>
    decode<any>((await nc.request(sandboxSubject(host!, op), encode({ session, fence, call: `c${fence}`, spec }), { timeout: 20_000 })).data)
  t.match(await ask('prepare', 20), { ok: true, prepared: { kind: 'ready' } })
  t.match(await ask('prepare', 30), { ok: true, prepared: { kind: 'ready' } }, 'a later activation takes the sandbox over')
  t.match(await ask('prepare', 20), { ok: false, error: 'fenced' }, 'the earlier one is refused from then on')
  t.match(await ask('close', 30), { ok: true })
  const junk = decode<any>((await nc.request(sandboxSubject(host!, 'prepare'), encode({ session: 'nope.>', fence: 1 }), { timeout: 5000 })).data)
  t.match(junk, { ok: false, error: 'failed' }, 'a call without a session id is refused')
})

t.test('deleting a session removes its directory on the sandbox host', async (t) => {
  const session = await newSession()
  await bash(session.id, 'echo x > y')
  const at = holder(session.id)
  t.ok(at)
  await client.beta.sessions.delete(session.id)
  await until('the directory goes', () => !existsSync(path.join(at!, 'sessions', session.id)), 10_000)
  t.pass('gone')
})

t.test('a SIGKILLed sandbox host: the running tool ends with an error, the next runs on another host with the workspace restored', async (t) => {
  const session = await newSession()
  const [made] = await bash(session.id, 'echo kept > kept.txt')
  t.notOk(made.is_error)
  const at = holder(session.id)!
  const victim = hosts[sandboxDirs.indexOf(at)]!
  const marker = `sleep 1012.${process.pid % 1000}`
  model.enqueue(
    { steps: [{ type: 'tool_use', name: 'bash', input: { command: marker } }] },
    { steps: [{ type: 'tool_use', name: 'bash', input: { command: 'cat kept.txt' } }] },
    {},
  )
  const stream = await client.beta.sessions.events.stream(session.id)
  await client.beta.sessions.events.send(session.id, { events: [say('go')] } as any)
  const waiting = collect(stream, isIdle, 30_000)
  await until('the sleep runs', () => pidsOf(marker).length)
  await victim.kill()
  const [lost, after] = results(await waiting)
  t.equal(lost.is_error, true)
  t.match(textOf(lost), /stopped answering|did not answer|no longer runs/)
  t.notOk(after.is_error, textOf(after))
  t.match(textOf(after), /^kept/, 'the workspace as the last completed tool call left it')
  t.match(textOf(after), /moved to another host/, 'and the model is told what the move lost')
  const other = sandboxDirs.find((d) => d !== at)!
  t.ok(existsSync(path.join(sessionWorkdir(other, session.id).host, 'kept.txt')), 'restored on the other sandbox host')
  t.equal(pidsOf(marker).length, 0, 'nothing of the dead host runs')
})

t.test('a SIGKILLed actor host leaves nothing running on the sandbox host', async (t) => {
  const session = await newSession()
  const marker = `sleep 1013.${process.pid % 1000}`
  model.enqueue({ steps: [{ type: 'tool_use', name: 'bash', input: { command: marker } }] })
  await client.beta.sessions.events.send(session.id, { events: [say('go')] } as any)
  await until('the sleep runs', () => pidsOf(marker).length)
  await serve.kill()
  // The sandbox host aborts a call its actor stopped keeping alive (5 s without a word, looked at every second).
  await until('the sleep is gone', () => !pidsOf(marker).length, 10_000)
  t.pass('the call was aborted there')
})
