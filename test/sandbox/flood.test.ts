import { mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { type FakeModelServer, startFakeModelServer } from '../fakes/model-server.js'
import '../helpers/keepalive.js'
import { startNats } from '../helpers/nats.js'
import { isolatedOrSkip } from '../helpers/sandbox-backend.js'
import { clientFor, startTroupe } from '../helpers/troupe.js'
import { agentAndEnv, collect, isIdle } from '../sessions/_helpers.js'

/**
 * A descriptor flood through one session's egress proxy (issue: one session took all 20,000 of the server's
 * descriptors and other sessions' turns took 20–28 s): the server runs with 2,048 descriptors, one session's
 * processes keep trying to hold 1,800 connections to its proxy for 20 s, and meanwhile another session's turns (model
 * calls and a bash tool each) keep completing promptly; the flooding session held at most its
 * TROUPE_SANDBOX_CONNECTIONS, the rest answered 503 naming the setting.
 */

const gate = isolatedOrSkip()
if (gate.skip) t.test('descriptor flood', { skip: gate.skip }, () => {})
else await suite()

/** Two processes (the sandbox allows 1,024 files each), each holding up to 900 connections, dropping refused ones. */
const FLOOD = String.raw`
import os, select, socket, time
def flood(n, secs):
    held, refused, reason = [], 0, b''
    end = time.time() + secs
    while time.time() < end:
        while len(held) < n:
            s = socket.socket(socket.AF_UNIX)
            try:
                s.connect('/run/egress/proxy.sock')
            except OSError:
                s.close()
                break
            held.append(s)
        time.sleep(0.05)
        keep = []
        for s in held:
            p = select.poll()
            p.register(s, select.POLLIN)
            if p.poll(0):
                data = s.recv(400)
                reason = data or reason
                refused += 1
                s.close()
            else:
                keep.append(s)
        held = keep
    time.sleep(1)
    still = []
    for s in held:
        p = select.poll()
        p.register(s, select.POLLIN)
        if not p.poll(0):
            still.append(s)
    return len(still), refused, reason
child = os.fork()
held, refused, reason = flood(900, 20)
print('held', held, 'refused', refused, flush=True)
if child == 0:
    os._exit(0)
os.waitpid(child, 0)
print(reason.decode(errors='replace').splitlines()[-1], flush=True)
print('flood done', flush=True)
`

async function suite() {
  const nats = await startNats()
  const model = await startFakeModelServer()
  const BIN = fileURLToPath(new URL('../../bin/troupe.mjs', import.meta.url))
  const troupe = await startTroupe({
    natsUrl: nats.url,
    command: ['/usr/bin/prlimit', '--nofile=2048:2048', '--', process.execPath, BIN, 'serve'],
    env: {
      TROUPE_MODEL_BASE_URL: model.url,
      ANTHROPIC_API_KEY: 'fake-key',
      TROUPE_MODEL_RETRY_BASE_MS: '20',
      TROUPE_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'troupe-flood-')),
      TROUPE_SANDBOX: 'isolated',
    },
  })
  t.teardown(() => {
    troupe.killNow()
    nats.stopNow()
    return model.close()
  })
  const client = clientFor(troupe.url, { maxRetries: 3 })
  const pid = troupe.proc.pid!
  t.test('another session works on through a flood', (t) => flood(t, client, model, pid))
}

async function flood(t: Test, client: ReturnType<typeof clientFor>, model: FakeModelServer, pid: number) {
  t.match(readFileSync(`/proc/${pid}/limits`, 'utf8'), /Max open files\s+2048\s+2048/, 'the server has 2,048 descriptors')

  const newSession = async () => {
    const { agent, env } = await agentAndEnv(
      client,
      { tools: [{ type: 'agent_toolset_20260401' }] },
      { config: { type: 'cloud', networking: { type: 'unrestricted' } } },
    )
    return client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
  }
  /** One turn of `id` running `command` in bash; its tool result and how long the turn took. */
  const turn = async (id: string, command: string) => {
    const t0 = Date.now()
    model.enqueue({ steps: [{ type: 'tool_use', name: 'bash', input: { command } }] }, { steps: [{ type: 'text', text: 'done' }] })
    const stream = await client.beta.sessions.events.stream(id)
    await client.beta.sessions.events.send(id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'go' }] }] } as any)
    const events = await collect(stream, isIdle, 60_000)
    const result = events.find((e) => e.type === 'agent.tool_result')
    return { text: result ? (result.content as any[]).map((c) => c.text).join('') : '', ms: Date.now() - t0, events }
  }

  const flooder = await newSession()
  const other = await newSession()
  t.match((await turn(other.id, 'echo warm')).text, /warm/)
  const started = await turn(flooder.id, `cat > /tmp/flood.py <<'EOF'\n${FLOOD}\nEOF\n(python3 /tmp/flood.py > /tmp/flood.out 2>&1 &) ; echo started`)
  t.match(started.text, /started/)

  const fds = () => readdirSync(`/proc/${pid}/fd`).length
  let most = 0
  const times: number[] = []
  const deadline = Date.now() + 15_000
  for (let i = 0; Date.now() < deadline; i++) {
    const r = await turn(other.id, `echo turn ${i}`)
    t.match(r.text, new RegExp(`^turn ${i}$`), `turn ${i} ran its tool`)
    t.notOk(
      r.events.some((e) => e.type === 'session.error'),
      'and reached the model without an error',
    )
    times.push(r.ms)
    most = Math.max(most, fds())
  }
  t.ok(times.length >= 3, `${times.length} turns during the flood`)
  t.ok(Math.max(...times) < 10_000, `every turn took well under the 20 s the flood once cost (${times.join(', ')} ms)`)
  t.ok(most < 2048 - 512, `the server kept its reserve (at most ${most} descriptors open)`)

  const done = await turn(flooder.id, 'for i in $(seq 300); do grep -q "flood done" /tmp/flood.out && break; sleep 0.1; done; cat /tmp/flood.out')
  const held = [...done.text.matchAll(/held (\d+) refused (\d+)/g)].map((m) => [Number(m[1]), Number(m[2])] as const)
  t.comment(`turns during the flood: ${times.join(', ')} ms; at most ${most} descriptors open in the server; ${done.text.split('\n').slice(0, 2).join('; ')}`)
  t.equal(held.length, 2, done.text)
  t.ok(held.reduce((a, [h]) => a + h, 0) <= 256, 'the flooding session held at most its 256 connections')
  t.ok(held.reduce((a, [, r]) => a + r, 0) > 1000, 'and was refused the rest, again and again')
  t.match(done.text, /connection refused: this sandbox already has 256 connections open, its limit \(TROUPE_SANDBOX_CONNECTIONS\)/)
}
