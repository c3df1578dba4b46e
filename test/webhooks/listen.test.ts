// `troupe webhooks listen` (supervisor/webhooks-listen.ts): a developer's receiving endpoint on this machine without a
// certificate. The server delivers over plain HTTP to a loopback port named in TROUPE_WEBHOOK_DEV_HOSTS
// (`host=http://127.0.0.1:port`); the command makes the endpoint through the API, and prints each delivery verified
// with its signing secret; a request that does not verify is answered 400 and printed so.
import { spawn } from 'node:child_process'
import { createServer, type AddressInfo } from 'node:net'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { readConfig } from '../../supervisor/config.js'
import '../helpers/keepalive.js'
import { startNats } from '../helpers/nats.js'
import { asUserRuns, clientFor, startTroupe } from '../helpers/troupe.js'
import { until } from '../helpers/wait.js'
import { keyringFile, newKey } from '../vaults/_helpers.js'

const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bin/troupe.mjs')

/** Runs `troupe webhooks …`: its output so far, and its exit once it ends. */
function troupeWebhooks(args: string[]) {
  const [cmd, ...rest] = asUserRuns([process.execPath, BIN, 'webhooks', ...args])
  const proc = spawn(cmd!, rest, { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  proc.stdout.on('data', (d) => (out += d))
  proc.stderr.on('data', (d) => (out += d))
  const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)))
  return { proc, out: () => out, exited }
}

/** A loopback port free right now, for the receiver the server is told of before it starts. */
async function freePort(): Promise<number> {
  const s = createServer()
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r))
  const { port } = s.address() as AddressInfo
  await new Promise((r) => s.close(r))
  return port
}

t.test('arguments: help, and a clear refusal of what it does not take', async (t) => {
  const help = troupeWebhooks(['listen', '--help'])
  t.equal(await help.exited, 0)
  t.match(help.out(), /TROUPE_WEBHOOK_DEV_HOSTS=<host>=http:\/\/127\.0\.0\.1:<port>/)
  const bad = troupeWebhooks(['listen', '--port', 'x'])
  t.equal(await bad.exited, 2)
  t.match(bad.out(), /--port must be 0 to 65535 \(was x\)/)
  const what = troupeWebhooks(['nope'])
  t.equal(await what.exited, 2)
})

t.test('TROUPE_WEBHOOK_DEV_HOSTS takes http:// for plain HTTP, on loopback only', async (t) => {
  const cfg = readConfig({ TROUPE_WEBHOOK_DEV_HOSTS: 'a.test=http://127.0.0.1:8787,b.test=127.0.0.1:8443' }, false)
  t.same(cfg.webhookDevHosts.get('a.test'), { address: '127.0.0.1', port: 8787, plain: true })
  t.same(cfg.webhookDevHosts.get('b.test'), { address: '127.0.0.1', port: 8443 })
  t.throws(() => readConfig({ TROUPE_WEBHOOK_DEV_HOSTS: 'a.test=http://10.0.0.1:80' }, false), /each address on loopback/)
})

t.test('a local receiver without a certificate gets every delivery, verified', async (t) => {
  const port = await freePort()
  const nats = await startNats()
  const troupe = await startTroupe({
    role: 'start',
    natsUrl: nats.url,
    env: { TROUPE_VAULT_KEYRING_FILE: keyringFile([{ id: 'k1', key: newKey() }]), TROUPE_WEBHOOK_DEV_HOSTS: `hooks.troupe.test=http://127.0.0.1:${port}` },
  })
  const listener = troupeWebhooks(['listen', '--port', String(port), '--server', troupe.url, '--types', 'session.created,agent.created'])
  t.teardown(() => {
    listener.proc.kill('SIGKILL')
    troupe.killNow()
    nats.stopNow()
  })
  await until('the endpoint made', () => /endpoint whep_\w+ made for https:\/\/hooks\.troupe\.test\//.test(listener.out()), 60_000)
  const client = clientFor(troupe.url, { maxRetries: 3 })
  const agent = await client.beta.agents.create({ name: 'a', model: 'claude-sonnet-4-5' } as any)
  const env = await client.beta.environments.create({ name: 'e' } as any)
  const session = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
  for (const [type, id] of [
    ['agent.created', agent.id],
    ['session.created', session.id],
  ]) {
    await until(`${type} printed`, () => new RegExp(`verified ${type.replace('.', '\\.')} ${id} \\(webhook-id whe_`).test(listener.out()), 60_000)
    t.pass(`${type} of ${id} delivered and verified`)
  }
  t.notMatch(listener.out(), /environment\.created/, 'only the types asked for')

  const forged = await fetch(`http://127.0.0.1:${port}/`, {
    method: 'POST',
    headers: { 'webhook-id': 'whe_forged', 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': 'v1,AAAA' },
    body: '{"type":"event"}',
  })
  t.equal(forged.status, 400, 'a request that does not verify is refused')
  await until('it is printed as such', () => /NOT verified .*webhook-id whe_forged/.test(listener.out()))

  listener.proc.kill('SIGINT')
  t.equal(await listener.exited, 0, 'Ctrl-C ends it cleanly')
})
