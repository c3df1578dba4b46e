import t from 'tap'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { connect, headers } from '@nats-io/transport-node'
import { encode } from '../../protocol/codec.js'
import { PARTITIONS } from '../../protocol/subjects.js'
import { freePort } from '../../supervisor/nats-server.js'
import { connectForInspect } from '../../supervisor/inspect/io.js'
import type { StatusReport } from '../../supervisor/inspect/status/index.js'
import { findNats } from '../../supervisor/lockfile-info.js'
import { asUserRuns } from '../helpers/troupe.js'
import { agentAndEnv, collect, isIdle, sessionStack, until } from '../sessions/_helpers.js'

const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bin/troupe.mjs')
// Every call over NATS, as docs/debugging.md says to start a server whose calls `troupe sub` should show.
const s = await sessionStack({ TROUPE_LOCAL_CALLS: '0' })

/** The environment of a user who set NATS_URL (or, with `natsUrl: undefined`, who did not). */
const envWith = (more: Record<string, string | undefined> = {}) => {
  const env: Record<string, string | undefined> = { ...process.env, NATS_URL: s.nats.url, ...more }
  for (const k of Object.keys(env)) if (env[k] === undefined) delete env[k]
  return env as NodeJS.ProcessEnv
}

interface Cli {
  proc: ChildProcess
  stdout(): string
  stderr(): string
  /** Waits until stdout (or stderr) matches; bounded, naming what it saw when it gives up. */
  waitFor(re: RegExp, stream?: 'stdout' | 'stderr', timeoutMs?: number): Promise<RegExpMatchArray>
  exited: Promise<number | null>
}

/** `node bin/troupe.mjs <args>` as a user runs it. */
function cli(args: string[], env = envWith()): Cli {
  const [cmd, ...argv] = asUserRuns([process.execPath, BIN, ...args], env)
  const proc = spawn(cmd!, argv, { env, stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => void (proc.exitCode === null && proc.signalCode === null && proc.kill('SIGKILL')))
  const out = { stdout: '', stderr: '' }
  const waiters = new Set<() => void>()
  for (const k of ['stdout', 'stderr'] as const) {
    proc[k]!.on('data', (d) => {
      out[k] += d
      for (const w of waiters) w()
    })
  }
  const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)))
  return {
    proc,
    stdout: () => out.stdout,
    stderr: () => out.stderr,
    exited,
    waitFor(re, stream = 'stdout', timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const m = re.exec(out[stream])
          if (!m) return
          done()
          resolve(m)
        }
        const timer = setTimeout(() => {
          done()
          reject(new Error(`no ${re} on ${stream} within ${timeoutMs} ms\nstdout: ${out.stdout}\nstderr: ${out.stderr}`))
        }, timeoutMs)
        const gone = () => {
          done()
          reject(new Error(`troupe ${args.join(' ')} exited before ${re}\nstdout: ${out.stdout}\nstderr: ${out.stderr}`))
        }
        const done = () => {
          clearTimeout(timer)
          waiters.delete(check)
          proc.off('exit', gone)
        }
        waiters.add(check)
        proc.once('exit', gone)
        check()
      })
    },
  }
}

/** Runs to completion: exit code and output. */
async function run(args: string[], env?: NodeJS.ProcessEnv) {
  const c = cli(args, env)
  const code = await c.exited
  return { code, stdout: c.stdout(), stderr: c.stderr() }
}

/** SIGINT, then the exit code; Ctrl-C must end the command at once. */
async function interrupt(c: Cli) {
  c.proc.kill('SIGINT')
  return c.exited
}

// One session with one finished turn, shared by the tests below. Bounded: once in a full-suite run this setup did not
// finish before tap's 120 s, which names no cause; past 60 s it fails with the server's log instead.
const { session } = await Promise.race([
  (async () => {
    const { agent, env } = await agentAndEnv(s.client)
    const session = await s.client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
    const stream = await s.client.beta.sessions.events.stream(session.id)
    s.model.enqueue({ steps: [{ type: 'text', text: 'hello there' }] })
    await s.client.beta.sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'hi' }] }] } as any)
    await collect(stream, isIdle)
    return { session }
  })(),
  new Promise<never>((_, reject) =>
    setTimeout(() => reject(new Error(`the shared session and turn took over 60 s; the server's log:\n${s.troupe.logs()}`)), 60_000).unref(),
  ),
])

const LINE = /^(\S+Z) {2}(sevt_\w+) {2}(\S+)\s*(.*)$/

t.test('tail prints the stored events as lines, from the start', async (t) => {
  const r = await run(['tail', session.id])
  t.equal(r.code, 0, r.stderr)
  const lines = r.stdout
    .trim()
    .split('\n')
    .map((l) => LINE.exec(l))
  t.ok(lines.every(Boolean), `every line is "<time>  <id>  <type>  <summary>":\n${r.stdout}`)
  const types = lines.map((m) => m![3])
  t.same(types, ['user.message', 'session.status_running', 'span.model_request_start', 'agent.message', 'span.model_request_end', 'session.status_idle'])
  t.equal(lines[0]![4], '"hi"')
  t.equal(lines[3]![4], '"hello there"')
  t.match(lines[5]![4], /end_turn/)
  for (const m of lines) t.ok(!Number.isNaN(Date.parse(m![1]!)), `${m![1]} is a time`)
  t.notMatch(r.stdout, /_processed/, 'internal records are left out')
})

t.test('tail --follow prints what is stored later, and Ctrl-C ends it with 0', async (t) => {
  const c = cli(['tail', session.id, '--follow'])
  await c.waitFor(/following sesn_/, 'stderr')
  t.match(c.stdout(), /agent\.message\s+"hello there"/, 'the history came first')
  s.model.enqueue({ steps: [{ type: 'text', text: 'second answer' }] })
  await s.client.beta.sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'once more' }] }] } as any)
  await c.waitFor(/user\.message\s+"once more"/)
  await c.waitFor(/agent\.message\s+"second answer"[\s\S]*session\.status_idle/)
  t.equal(await interrupt(c), 0)
})

t.test('tail refuses what is not a session id before it reaches a subject, and names a missing session', async (t) => {
  let r = await run(['tail', 'sesn_a.>'])
  t.equal(r.code, 2)
  t.match(r.stderr, /"sesn_a\.>" is not a session id/)
  t.match(r.stderr, /usage: troupe tail/)
  r = await run(['tail', 'sesn_01NOSUCHSESSION000000000'])
  t.equal(r.code, 1)
  t.match(r.stderr, /no session sesn_01NOSUCHSESSION000000000 at nats:\/\//)
})

/** What `troupe sub` printed so far, one JSON value a line. */
const jsonLines = (c: Cli) =>
  c
    .stdout()
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l))

t.test('sub prints each message as one decoded JSON line, headers included', async (t) => {
  const c = cli(['sub', 'inspect.test.>', 'troupe.session.>'])
  await c.waitFor(/listening on inspect\.test\.>, troupe\.session\.>/, 'stderr')
  const nc = await connect({ servers: s.nats.url })
  t.teardown(() => nc.close())
  const h = headers()
  h.set('Troupe-Type', 'probe')
  nc.publish('inspect.test.msgpack', encode({ op: 'get', n: 1, bin: new Uint8Array([1, 2]) }), { headers: h, reply: 'inspect.reply' })
  nc.publish('inspect.test.json', new TextEncoder().encode('{"a":[1,2]}'))
  nc.publish('inspect.test.text', new TextEncoder().encode('plain words'))
  nc.publish('inspect.test.bytes', new Uint8Array([0xc1, 0xff, 0x00, 0xfe]))
  await nc.flush()
  // An actor request as the gateway sends it: msgpack, decoded.
  await s.client.beta.sessions.retrieve(session.id)
  await c.waitFor(/"subject":"troupe\.session\.p\d\d\.sesn_\w+\.get"/)
  const lines = jsonLines(c)
  const by = (subject: string) => lines.find((l) => l.subject === subject)
  t.same(by('inspect.test.msgpack'), {
    subject: 'inspect.test.msgpack',
    reply: 'inspect.reply',
    headers: { 'Troupe-Type': 'probe' },
    encoding: 'msgpack',
    data: { op: 'get', n: 1, bin: { base64: 'AQI=' } },
  })
  t.same(by('inspect.test.json'), { subject: 'inspect.test.json', encoding: 'json', data: { a: [1, 2] } })
  t.same(by('inspect.test.text'), { subject: 'inspect.test.text', encoding: 'text', data: 'plain words' })
  t.same(by('inspect.test.bytes'), { subject: 'inspect.test.bytes', encoding: 'base64', data: Buffer.from([0xc1, 0xff, 0x00, 0xfe]).toString('base64') })
  const get = lines.find((l) => /^troupe\.session\..*\.get$/.test(l.subject))
  t.equal(get.encoding, 'msgpack')
  t.type(get.data, 'object', 'the actor body decoded')
  t.ok(get.reply, 'a request carries its reply subject')
  t.equal(await interrupt(c), 0)
})

t.test('sub --replies prints each request, then its answer and none of the other replies', async (t) => {
  const c = cli(['sub', '--replies', `troupe.session.*.${session.id}.>`])
  await c.waitFor(/listening on .* and their replies/, 'stderr')
  await s.client.beta.sessions.retrieve(session.id)
  await c.waitFor(/"reply_to":"troupe\.session\.p\d\d\.sesn_\w+\.get"/)
  const lines = jsonLines(c)
  const [request, answer] = lines
  t.match(request, { subject: /\.get$/, encoding: 'msgpack' })
  t.match(answer, { subject: request.reply, reply_to: request.subject, encoding: 'msgpack', data: { ok: true, body: { id: session.id } } })
  t.notOk(
    lines.some((l) => l.subject.startsWith('_INBOX.') && !l.reply_to),
    'no reply to anything else (heartbeat acknowledgements) is printed',
  )
  t.equal(await interrupt(c), 0)
})

t.test('sub refuses a malformed subject', async (t) => {
  const r = await run(['sub', 'a..b'])
  t.equal(r.code, 2)
  t.match(r.stderr, /"a\.\.b" is not a NATS subject/)
})

t.test('status lists the host, its partitions when placed, and the sessions', async (t) => {
  // The host writes its placement records shortly after it starts: wait for them rather than assume.
  let report!: StatusReport
  await until(
    'one live host',
    async () => {
      const r = await run(['status', '--json'])
      t.equal(r.code, 0, r.stderr)
      report = JSON.parse(r.stdout)
      return report.hosts.filter((h) => !h.stale).length === 1
    },
    20_000,
  )
  const [host] = report.hosts
  t.equal(report.nats.url, s.nats.url)
  t.match(host!.id, /^host_/)
  t.equal(host!.pid, s.troupe.proc.pid, 'the beat names the troupe process')
  report = await until(
    'every partition held',
    async () => {
      const r = JSON.parse((await run(['status', '--json'])).stdout) as StatusReport
      return ['agent', 'session'].every((k) => r.partitions?.[k as 'agent'].held[host!.id]?.length === PARTITIONS) && r
    },
    20_000,
  )
  t.same(report.partitions!.session.unheld, [])
  t.ok(report.sessions.total >= 1)
  t.ok(report.sessions.by_status.idle! >= 1, 'the session is idle')
  t.same(report.sessions.running, [])

  const text = await run(['status'])
  t.equal(text.code, 0, text.stderr)
  t.match(text.stdout, /^hosts: 1 live$/m)
  t.match(text.stdout, new RegExp(`^  ${host!.id}  `, 'm'))
  t.match(text.stdout, /^sessions: \d+ \(.*\d+ idle.*\)$/m)
})

t.test('without NATS_URL the commands find the NATS of a running troupe through its lock file', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'troupe-lock-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const env = envWith({ NATS_URL: undefined, TROUPE_DATA_DIR: dir })
  const lock = (info: object) => writeFileSync(path.join(dir, 'troupe.lock'), JSON.stringify(info))

  t.throws(() => findNats(env), new RegExp(`no running troupe in ${dir} \\(no troupe.lock there\\); set NATS_URL or start one`))
  lock({ pid: process.pid, started_at: Date.now(), role: 'start' })
  t.throws(() => findNats(env), /troupe start \(pid \d+, .*\) holds .* but its troupe.lock names no NATS URL yet/)
  t.same(findNats({ ...env, NATS_URL: 'nats://elsewhere:4222' }), { url: 'nats://elsewhere:4222' }, 'NATS_URL wins')

  const gone = `nats://127.0.0.1:${await freePort()}`
  lock({ pid: 999_999_999, started_at: Date.now(), role: 'start', nats_url: gone })
  await t.rejects(connectForInspect('test', env), new RegExp(`nothing is listening at ${gone}.*came from .*troupe\\.lock.*pid 999999999.*still running`))

  lock({ pid: process.pid, started_at: Date.now(), role: 'start', nats_url: s.nats.url, http_url: s.url })
  const r = await run(['status', '--json'], env)
  t.equal(r.code, 0, r.stderr)
  t.equal(JSON.parse(r.stdout).nats.url, s.nats.url)
})
