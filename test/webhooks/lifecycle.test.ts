// The managed-agents webhook events the official client knows (protocol/schemas/webhook.ts CLIENT_WEBHOOK_EVENT_TYPES):
// an endpoint may subscribe to every one, and each the server makes is delivered at its moment, signed (verified with
// the official client's `unwrap()`), through the official client's calls: sessions created, running, idled, waiting on
// the client; agents, environments, vaults and their credentials, deployments and their scheduled runs starting.
import Anthropic from '@anthropic-ai/sdk'
import t from 'tap'
import { CLIENT_WEBHOOK_EVENT_TYPES, WEBHOOK_EVENT_TYPES } from '../../protocol/schemas/webhook.js'
import { WORKSPACE_ID } from '../../protocol/subjects.js'
import { startFakeModelServer } from '../fakes/model-server.js'
import '../helpers/keepalive.js'
import { startNats } from '../helpers/nats.js'
import { clientFor, raw, startTroupe } from '../helpers/troupe.js'
import { until } from '../helpers/wait.js'
import { staticBearer } from '../vaults/_helpers.js'
import { deliveringEnv, startReceiver } from './_helpers.js'

const receiver = await startReceiver()
const model = await startFakeModelServer()
const nats = await startNats()
const troupe = await startTroupe({
  role: 'start',
  natsUrl: nats.url,
  env: deliveringEnv(receiver, model, {
    // A schedule clock 30 times as fast, 20 s before a minute: a scheduled run starts within a second or so.
    TROUPE_SCHEDULE_CLOCK: `start=2026-03-01T00:00:40Z,rate=30,since=${Date.now()}`,
  }),
})
t.teardown(async () => {
  troupe.killNow()
  nats.stopNow()
  receiver.close()
  await model.close()
})
const client = clientFor(troupe.url, { maxRetries: 3 })
const H = { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' }
const LOOKUP = { type: 'custom', name: 'lookup', description: 'Looks a key up.', input_schema: { type: 'object' } }

t.test('every event type the client knows is accepted; each one the server makes is delivered at its moment', async (t) => {
  const r = await raw(troupe.url, 'POST', '/v1/webhooks', { url: 'https://hooks.example.test/all', event_types: [...WEBHOOK_EVENT_TYPES] }, H)
  t.equal(r.status, 200, `an endpoint subscribed to all ${WEBHOOK_EVENT_TYPES.length} types: ${r.text.slice(0, 200)}`)
  const verifier = new Anthropic({ apiKey: 'x', webhookKey: r.json.signing_secret }) as any
  for (const type of CLIENT_WEBHOOK_EVENT_TYPES) {
    const one = await raw(troupe.url, 'POST', '/v1/webhooks', { url: 'https://hooks.example.test/one', event_types: [type] }, H)
    t.equal(one.status, 200, `${type} accepted alone`)
  }
  const bad = await raw(troupe.url, 'POST', '/v1/webhooks', { url: 'https://hooks.example.test/x', event_types: ['agent.exploded'] }, H)
  t.equal(bad.status, 400, 'an unknown type is still a 400')
  t.match(bad.json.error.message, /event_types/)

  // Agents, environments, vaults and credentials, through the official client.
  const agent = await client.beta.agents.create({ name: 'a', model: 'claude-sonnet-4-5', tools: [LOOKUP] } as any)
  await client.beta.agents.update(agent.id, { version: agent.version, name: 'a2' } as any)
  const env = await client.beta.environments.create({ name: 'e' } as any)
  await client.beta.environments.update(env.id, { name: 'e2' } as any)
  const doomed = await client.beta.environments.create({ name: 'doomed' } as any)
  await client.beta.environments.archive(doomed.id)
  await client.beta.environments.delete(doomed.id)
  const vault = await client.beta.vaults.create({ display_name: 'v' } as any)
  const cred = await client.beta.vaults.credentials.create(vault.id, { auth: staticBearer() } as any)
  await client.beta.vaults.credentials.archive(cred.id, { vault_id: vault.id })
  const cred2 = await client.beta.vaults.credentials.create(vault.id, { auth: staticBearer('https://mcp2.example.com/mcp') } as any)
  await client.beta.vaults.credentials.delete(cred2.id, { vault_id: vault.id })
  await client.beta.vaults.archive(vault.id)
  const gone = await client.beta.vaults.create({ display_name: 'gone' } as any)
  await client.beta.vaults.delete(gone.id)

  // A session: created, running, idled waiting on the client's custom tool, then idled.
  model.enqueue({ steps: [{ type: 'tool_use', name: 'lookup', input: { key: 'k' } }] })
  const session = await client.beta.sessions.create({
    agent: agent.id,
    environment_id: env.id,
    initial_events: [{ type: 'user.message', content: [{ type: 'text', text: 'look it up' }] }],
  } as any)

  // A deployment: created, updated, its scheduled run started, paused, unpaused, archived.
  const deployment = await client.beta.deployments.create({
    name: 'd',
    agent: agent.id,
    environment_id: env.id,
    initial_events: [{ type: 'user.message', content: [{ type: 'text', text: 'scheduled' }] }],
    schedule: { type: 'cron', expression: '* * * * *', timezone: 'UTC' },
  } as any)
  await client.beta.deployments.update(deployment.id, { name: 'd2' } as any)
  const scheduled = await until(
    'a scheduled run',
    async () => (await client.beta.deploymentRuns.list({ deployment_id: deployment.id, trigger_type: 'schedule' } as any)).data[0] as any,
    30_000,
    200,
  )
  await client.beta.deployments.pause(deployment.id)
  await client.beta.deployments.unpause(deployment.id)
  await client.beta.deployments.archive(deployment.id)

  const want: Array<[string, string]> = [
    ['agent.created', agent.id],
    ['agent.updated', agent.id],
    ['environment.created', env.id],
    ['environment.updated', env.id],
    ['environment.archived', doomed.id],
    ['environment.deleted', doomed.id],
    ['vault.created', vault.id],
    ['vault_credential.created', cred.id],
    ['vault_credential.archived', cred.id],
    ['vault_credential.created', cred2.id],
    ['vault_credential.deleted', cred2.id],
    ['vault.archived', vault.id],
    ['vault.deleted', gone.id],
    ['session.created', session.id],
    ['session.running', session.id],
    ['session.idled', session.id],
    ['session.requires_action', session.id],
    ['deployment.created', deployment.id],
    ['deployment.updated', deployment.id],
    ['deployment_run.started', scheduled.id],
    ['deployment.paused', deployment.id],
    ['deployment.unpaused', deployment.id],
    ['deployment.archived', deployment.id],
  ]
  const got = () =>
    receiver.got
      .filter((g) => g.path === '/all')
      .map((g) => {
        const e = verifier.beta.webhooks.unwrap(g.body, { headers: g.headers })
        if (g.headers['webhook-id'] !== e.id) throw new Error(`webhook-id ${g.headers['webhook-id']} is not ${e.id}`)
        return e
      })
  const has = (type: string, id: string) => got().some((e) => e.data.type === type && e.data.id === id)
  await until('every event delivered', () => want.every(([type, id]) => has(type, id)), 60_000, 200).catch(() => undefined)
  for (const [type, id] of want) t.ok(has(type, id), `${type} of ${id}`)

  const events = got()
  for (const e of events) {
    t.match(e, { type: 'event', id: /^whe_/, data: { workspace_id: WORKSPACE_ID } })
    if (e.data.type.startsWith('vault_credential.'))
      t.equal(e.data.vault_id, [cred.id, cred2.id].includes(e.data.id) ? vault.id : gone.id, 'a credential names its vault')
  }
  const once = (type: string, id: string) => events.filter((e) => e.data.type === type && e.data.id === id).length
  t.equal(once('agent.created', agent.id), 1, 'a change makes its event once')
  t.equal(once('session.requires_action', session.id), 1, 'one idle waits on the client')
  t.notOk(
    events.some((e) => e.data.type === 'environment.updated' && e.data.id === env.id && once('environment.updated', env.id) > 1),
    'a session taking a reference to an environment updates nothing',
  )
  const created = events.find((e) => e.data.type === 'agent.created')
  t.ok(Math.abs(Date.parse(created.created_at) - Date.parse(agent.created_at)) < 5000, "made at the change's stored time")
})
