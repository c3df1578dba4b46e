import { mkdtempSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { connect } from '@nats-io/transport-node'
import t from 'tap'
import { startFakeModelServer } from '../fakes/model-server.js'
import '../helpers/keepalive.js'
import { startNats } from '../helpers/nats.js'
import { isolatedOrSkip } from '../helpers/sandbox-backend.js'
import { clientFor, settledLogLines, startTroupe, type TroupeProcess } from '../helpers/troupe.js'
import { agentAndEnv, collect, history, isIdle } from '../sessions/_helpers.js'
import { CURL, holds, receivers, SHADOW, vaults, WINS } from './_env-secrets.js'
import { filesBeneath, keyringFile, newKey } from './_helpers.js'

/**
 * `environment_variable` credentials when the session's tools run on a sandbox host (`troupe sandbox`, which has no
 * keyring): the session's host opens the secrets and seals them to the sandbox host's key for the `prepare` call, so
 * no NATS message holds one in clear (every message of the test's nats-server is read), and the sandbox host's egress
 * proxy puts them in as on a single host.
 */

async function suite() {
  const { seen, plainPort, tlsPort, cert } = await receivers()
  const nats = await startNats()
  const model = await startFakeModelServer()
  const procs: TroupeProcess[] = []
  t.teardown(() => {
    for (const p of procs) p.killNow()
    nats.stopNow()
    return model.close()
  })
  // Every message any process sends through the server, as bytes.
  const tap = await connect({ servers: nats.url })
  t.teardown(() => tap.close())
  const wire: string[] = []
  tap.subscribe('>', {
    callback: (_err, m) => {
      wire.push(Buffer.from(m.data).toString('latin1'))
    },
  })
  const dir = (name: string) => mkdtempSync(path.join(os.tmpdir(), `troupe-env-remote-${name}-`))
  const serve = await startTroupe({
    natsUrl: nats.url,
    env: {
      TROUPE_MODEL_BASE_URL: model.url,
      ANTHROPIC_API_KEY: 'fake-key',
      TROUPE_MODEL_RETRY_BASE_MS: '20',
      TROUPE_DATA_DIR: dir('serve'),
      TROUPE_SANDBOX_PLACEMENT: 'remote',
      TROUPE_VAULT_KEYRING_FILE: keyringFile([{ id: 'k1', key: newKey() }]),
      LOG_LEVEL: 'debug',
    },
  })
  procs.push(serve)
  const sandbox = await startTroupe({
    role: 'sandbox',
    natsUrl: nats.url,
    env: {
      TROUPE_DATA_DIR: dir('sbx'),
      TROUPE_SANDBOX: 'isolated',
      TROUPE_SANDBOX_EGRESS_ALLOW: `127.0.0.1:${plainPort},127.0.0.1:${tlsPort}`,
      TROUPE_SANDBOX_EGRESS_CA_FILE: cert,
      LOG_LEVEL: 'debug',
    },
  })
  procs.push(sandbox)
  const client = clientFor(serve.url, { maxRetries: 3 })
  const { agent, env } = await agentAndEnv(
    client,
    { tools: [{ type: 'agent_toolset_20260401' }] },
    { config: { type: 'cloud', networking: { type: 'unrestricted' } } },
  )
  const session = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id, vault_ids: await vaults(client) } as any)

  t.test('secrets sealed to the sandbox host, put in by its proxy', async (t) => {
    model.enqueue(
      { steps: [{ type: 'tool_use', name: 'bash', input: { command: 'env | grep _KEY=' } }] },
      {
        steps: [
          {
            type: 'tool_use',
            name: 'bash',
            input: {
              command: [
                `${CURL} -H "Authorization: Bearer $API_KEY" --data "k=$API_KEY&s=$SHADOW_KEY" http://localhost:${plainPort}/plain`,
                `${CURL} -H "Authorization: Bearer $API_KEY" https://localhost:${tlsPort}/tls`,
                `${CURL} -H "Authorization: Bearer $API_KEY" http://127.0.0.1:${plainPort}/elsewhere`,
              ].join('; '),
            },
          },
        ],
      },
      { steps: [{ type: 'text', text: 'done' }] },
    )
    const stream = await client.beta.sessions.events.stream(session.id)
    await client.beta.sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'go' }] }] } as any)
    const events = await collect(stream, isIdle, 90_000)
    const results = events.filter((e) => e.type === 'agent.tool_result').map((e) => (e.content as any[]).map((c) => c.text).join(''))

    t.match(results[0], /API_KEY=troupe-secret-[0-9a-f]{32}/, 'the sandbox host sees the placeholder')
    const placeholder = /API_KEY=(troupe-secret-[0-9a-f]{32})/.exec(results[0] ?? '')?.[1]
    t.equal(seen.find((x) => x.path === '/plain')?.auth, `Bearer ${WINS}`, 'plain HTTP: the header')
    t.equal(seen.find((x) => x.path === '/plain')?.body, `k=${WINS}&s=${SHADOW}`, 'plain HTTP: the body')
    t.equal(seen.find((x) => x.path === '/tls')?.auth, `Bearer ${WINS}`, 'HTTPS')
    t.equal(seen.find((x) => x.path === '/elsewhere')?.auth, `Bearer ${placeholder}`, 'another host: the placeholder')

    await tap.flush()
    t.ok(
      wire.some((m) => m.includes('sealed_secrets')),
      'the prepare call carried the secrets sealed',
    )
    t.same(
      wire.flatMap((m) => holds(m)),
      [],
      'no NATS message holds a secret in clear',
    )
    t.same(holds(JSON.stringify(await history(client, session.id))), [], 'no event holds one')
    for (const p of [serve, sandbox]) t.same(holds((await settledLogLines(p)).map((l) => JSON.stringify(l)).join('\n')), [], 'no log line holds one')
    t.same(
      filesBeneath(nats.dir).flatMap((b) => holds(b.toString('latin1'))),
      [],
      'no byte of the JetStream store holds one',
    )
  })
}

const gate = isolatedOrSkip()
if (gate.skip) t.test('environment_variable credentials on sandbox hosts', { skip: gate.skip }, () => {})
else await suite()
