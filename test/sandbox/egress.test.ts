import { createServer, type Server } from 'node:http'
import { mkdtempSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { isolatedOrSkip } from '../helpers/sandbox-backend.js'
import { agentAndEnv, collect, isIdle, sessionStack } from '../sessions/_helpers.js'

/**
 * Networking of isolated sessions (issue 25 point 2), through real sessions with a fake model scripting bash: the only
 * way out is the session's egress proxy; a limited environment reaches its allowed host and nothing else (through the
 * proxy, directly, by raw TCP or UDP); an unrestricted one never reaches the host's own services (the server's HTTP
 * port, its NATS, on loopback or on the host's own addresses) nor link-local metadata addresses.
 *
 * The test's own servers are on this host, which sandboxes may never reach by default: the one the limited session is
 * allowed is let through by the operator's TROUPE_SANDBOX_EGRESS_ALLOW, by address and port.
 */

const gate = isolatedOrSkip()
if (gate.skip) t.test('isolated networking', { skip: gate.skip }, () => {})
else await suite()

async function listen(body: string): Promise<{ server: Server; port: number }> {
  const server = createServer((_req, res) => res.end(body))
  await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve))
  t.teardown(() => server.close())
  return { server, port: (server.address() as { port: number }).port }
}

async function suite() {
  const allowed = await listen('allowed-host')
  const other = await listen('other-host')
  const s = await sessionStack({
    TROUPE_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'troupe-egress-test-')),
    TROUPE_SANDBOX: 'isolated',
    TROUPE_SANDBOX_EGRESS_ALLOW: `127.0.0.1:${allowed.port}`,
  })
  const natsPort = Number(new URL(s.nats.url).port)
  const httpPort = Number(new URL(s.url).port)
  // The host's own non-loopback addresses, where a service bound to 0.0.0.0 (NATS, the server) also answers.
  const hostAddress = Object.values(os.networkInterfaces())
    .flat()
    .find((i) => i && !i.internal && i.family === 'IPv4')?.address
  const TOOLSET = [{ type: 'agent_toolset_20260401' }]
  // curl through the sandbox's proxy even for names NO_PROXY keeps local (localhost), printing the outcome on one line.
  const viaProxy = (url: string) => `echo "${url} -> $(curl -sS -m 5 -x "$http_proxy" --noproxy '' ${url} 2>&1 | head -c 200)"`

  async function newSession(networking: Record<string, unknown>) {
    const { agent, env } = await agentAndEnv(s.client, { tools: TOOLSET }, { config: { type: 'cloud', networking } })
    return s.client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
  }

  async function bash(id: string, ...commands: string[]): Promise<string[]> {
    s.model.enqueue(...commands.map((command) => ({ steps: [{ type: 'tool_use' as const, name: 'bash', input: { command } }] })), {
      steps: [{ type: 'text', text: 'done' }],
    })
    const stream = await s.client.beta.sessions.events.stream(id)
    await s.client.beta.sessions.events.send(id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'go' }] }] } as any)
    const events = await collect(stream, isIdle, 60_000)
    return events.filter((e) => e.type === 'agent.tool_result').map((e) => (e.content as any[]).map((c) => c.text).join(''))
  }

  t.test('limited: the allowed host and nothing else, by any route', async (t) => {
    const session = await newSession({ type: 'limited', allowed_hosts: ['localhost'] })
    const [proxied, direct] = await bash(
      session.id,
      [
        viaProxy(`http://localhost:${allowed.port}/`),
        viaProxy(`http://127.0.0.1:${other.port}/`),
        viaProxy(`http://localhost:${other.port}/`),
        viaProxy('https://registry.npmjs.org/'),
      ].join('; '),
      [
        `curl -sS -m 5 --noproxy '*' http://${hostAddress}:${other.port}/ 2>&1 | head -c 200; echo`,
        `(echo x > /dev/tcp/${hostAddress}/${other.port}) 2>&1 | head -1`,
        `(echo x > /dev/udp/${hostAddress}/53) 2>&1 | head -1`,
        `(echo x > /dev/tcp/127.0.0.1/${allowed.port}) 2>&1 | head -1`,
      ].join('; '),
    )
    t.match(proxied, `http://localhost:${allowed.port}/ -> allowed-host`, 'the allowed host answers through the proxy')
    t.match(proxied, new RegExp(`http://127\\.0\\.0\\.1:${other.port}/ -> .*blocked`), 'a host not on the list is refused by name')
    t.match(proxied, new RegExp(`http://localhost:${other.port}/ -> .*(403|blocked)`), 'an allowed name at an address the operator did not allow is refused')
    t.match(proxied, /registry\.npmjs\.org\/ -> .*(403|blocked)/, 'a public host not on the list is refused')
    t.notMatch(direct, /other-host|allowed-host/, 'nothing reached directly')
    t.match(direct, /Network is unreachable|Couldn't connect/, 'direct connections go nowhere')
    t.match(direct, /connect: Connection refused/, "the sandbox's loopback is its own: the host's listener is not there")
  })

  t.test("unrestricted: never the host's own services nor metadata addresses", async (t) => {
    const session = await newSession({ type: 'unrestricted' })
    const targets = [
      `http://127.0.0.1:${natsPort}/`,
      `http://localhost:${httpPort}/v1/agents`,
      `http://${hostAddress}:${natsPort}/`,
      `http://${hostAddress}:${httpPort}/v1/agents`,
      `http://[::1]:${httpPort}/`,
      `http://0x7f.1:${httpPort}/`,
      `http://[::ffff:127.0.0.1]:${httpPort}/`,
      'http://169.254.169.254/latest/meta-data/',
      `http://127.0.0.1:${other.port}/`,
    ]
    const [out] = await bash(session.id, targets.map(viaProxy).join('; '))
    for (const url of targets) t.match(out, new RegExp(`${url.replace(/[[\]().*+?]/g, '\\$&')} -> .*(403|blocked)`), `${url} refused`)
    t.notMatch(out, /INFO|"data"|other-host/, 'no service of the host answered')
    // What the operator allows is reachable without a list (the address stands for "the network the host reaches").
    const [ok] = await bash(session.id, viaProxy(`http://localhost:${allowed.port}/`))
    t.match(ok, '-> allowed-host')
  })

  t.test('an interrupt kills the command, not the way out', async (t) => {
    const session = await newSession({ type: 'limited', allowed_hosts: ['localhost'] })
    const stream = await s.client.beta.sessions.events.stream(session.id)
    s.model.enqueue({ steps: [{ type: 'tool_use', name: 'bash', input: { command: 'sleep 1000' } }] })
    await s.client.beta.sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'go' }] }] } as any)
    await collect(stream, (e) => e.type === 'agent.tool_use', 30_000)
    const rest = await s.client.beta.sessions.events.stream(session.id)
    await s.client.beta.sessions.events.send(session.id, { events: [{ type: 'user.interrupt' }] } as any)
    await collect(rest, isIdle, 30_000)
    const [after] = await bash(session.id, viaProxy(`http://localhost:${allowed.port}/`))
    t.match(after, '-> allowed-host')
  })
}
