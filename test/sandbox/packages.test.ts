import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { isolatedOrSkip } from '../helpers/sandbox-backend.js'
import { agentAndEnv, collect, isIdle, sessionStack } from '../sessions/_helpers.js'

/**
 * Environment packages on the isolated backend (issue 25 point 3, SPEC environments rules 10, 11), through real
 * sessions: a tiny npm package served by the test installs before the first tool runs and is there for bash; a
 * package that fails blocks the turn's tools with a session.error, and the next turn that uses a tool installs it.
 * The packages come from this host (the test's server), which sandboxes reach only by the operator's
 * TROUPE_SANDBOX_EGRESS_ALLOW.
 */

const gate = isolatedOrSkip()
if (gate.skip) t.test('environment packages', { skip: gate.skip }, () => {})
else await suite()

/** An npm tarball of a package `name` whose bin of the same name prints `says`. */
function tarball(name: string, says: string): Buffer {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'troupe-pkg-'))
  mkdirSync(path.join(dir, 'package'))
  writeFileSync(path.join(dir, 'package', 'package.json'), JSON.stringify({ name, version: '1.0.0', bin: { [name]: 'cli.js' } }))
  writeFileSync(path.join(dir, 'package', 'cli.js'), `#!/usr/bin/env node\nconsole.log(${JSON.stringify(says)})\n`, { mode: 0o755 })
  execFileSync('tar', ['czf', 'p.tgz', 'package'], { cwd: dir })
  return readFileSync(path.join(dir, 'p.tgz'))
}

async function suite() {
  const packages = new Map([['/tiny-1.0.0.tgz', tarball('tiny', 'tiny works')]])
  const server = createServer((req, res) => {
    const body = packages.get(req.url ?? '')
    if (!body) return void res.writeHead(404).end('not here yet')
    res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(body)
  })
  await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve))
  t.teardown(() => server.close())
  const port = (server.address() as { port: number }).port
  // npm goes direct for names NO_PROXY lists (localhost), so the packages are served on the host's own address.
  const host = Object.values(os.networkInterfaces())
    .flat()
    .find((i) => i && !i.internal && i.family === 'IPv4')?.address
  const url = (file: string) => `http://${host}:${port}${file}`
  const s = await sessionStack({
    TROUPE_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'troupe-packages-')),
    TROUPE_SANDBOX: 'isolated',
    TROUPE_SANDBOX_EGRESS_ALLOW: `${host}:${port}`,
  })
  const TOOLSET = [{ type: 'agent_toolset_20260401' }]

  async function newSession(lists: Record<string, string[]>) {
    const { agent, env } = await agentAndEnv(s.client, { tools: TOOLSET }, { config: { type: 'cloud', packages: { type: 'packages', ...lists } } })
    return s.client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
  }

  /** One turn in which the model runs `command` in bash (then says done, unless `blocked`: the turn ends first); its events. */
  async function turn(id: string, command: string, blocked = false) {
    s.model.enqueue({ steps: [{ type: 'tool_use', name: 'bash', input: { command } }] })
    if (!blocked) s.model.enqueue({ steps: [{ type: 'text', text: 'done' }] })
    const stream = await s.client.beta.sessions.events.stream(id)
    await s.client.beta.sessions.events.send(id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'go' }] }] } as any)
    return collect(stream, isIdle, 120_000)
  }
  const resultOf = (events: any[]) => events.find((e) => e.type === 'agent.tool_result')
  const textOf = (e: any) => ((e?.content ?? []) as any[]).map((c) => c.text).join('')

  t.test('a package installs before the first tool runs, and is there for bash', async (t) => {
    const session = await newSession({ npm: [url('/tiny-1.0.0.tgz')] })
    const events = await turn(session.id, 'tiny; which tiny')
    t.notOk(
      events.find((e) => e.type === 'session.error'),
      'no error',
    )
    const result = resultOf(events)
    t.equal(result.is_error, false)
    t.match(textOf(result), /^tiny works\n\/opt\/packages\/bin\/tiny/)
    // The next turn finds it installed: nothing is fetched again.
    const again = await turn(session.id, 'tiny')
    t.match(textOf(resultOf(again)), 'tiny works')
  })

  t.test('a package that fails blocks the tools with a session.error; the next turn installs it', async (t) => {
    const session = await newSession({ npm: [url('/flaky-1.0.0.tgz')] })
    const first = await turn(session.id, 'flaky', true)
    const error = first.find((e) => e.type === 'session.error')
    t.equal(error?.error.type, 'unknown_error')
    t.match(error?.error.message, /packages did not install.*next turn that uses a tool installs them again[\s\S]*npm/)
    t.equal(error?.error.retry_status.type, 'exhausted')
    const blocked = resultOf(first)
    t.equal(blocked.is_error, true)
    t.match(textOf(blocked), /Not run: the environment’s packages did not install/)
    t.equal(first.at(-1).stop_reason.type, 'retries_exhausted', 'the turn ends: tools cannot run')

    packages.set('/flaky-1.0.0.tgz', tarball('flaky', 'flaky works now'))
    const second = await turn(session.id, 'flaky')
    t.notOk(
      second.find((e) => e.type === 'session.error'),
      'installed this time',
    )
    t.match(textOf(resultOf(second)), 'flaky works now')
  })

  t.test('a manager missing from the sandbox image is named', { skip: existsSync('/usr/bin/cargo') && 'this host has cargo in /usr' }, async (t) => {
    const session = await newSession({ cargo: ['ripgrep'] })
    const events = await turn(session.id, 'true', true)
    t.match(events.find((e) => e.type === 'session.error')?.error.message, /cargo: cargo is not in the sandbox image/)
  })
}
