import { jetstream } from '@nats-io/jetstream'
import { connect } from '@nats-io/transport-node'
import t from 'tap'
import { enqueueDelivery } from '../../actors/webhook/deliveries.js'
import { startNats } from '../helpers/nats.js'
import { raw, settledLogLines, startTroupe, type TroupeProcess } from '../helpers/troupe.js'
import { until } from '../helpers/wait.js'
import { keyringFile, newKey } from '../vaults/_helpers.js'
import { eventOf, startReceiver } from './_helpers.js'

// An orchestrator whose keyring differs from the one that sealed an endpoint's signing secret (same key id, another
// key) makes no attempt: it says so, naming the endpoint and the key, and leaves the delivery to a process whose
// keyring opens it, which then delivers it (nothing counted as failed, nothing lost).

const receiver = await startReceiver()
const nats = await startNats()
const procs: TroupeProcess[] = []
t.teardown(() => {
  for (const p of procs) p.killNow()
  nats.stopNow()
  receiver.close()
})
const right = { TROUPE_VAULT_KEYRING_FILE: keyringFile([{ id: 'k1', key: newKey() }]) }
const wrong = { TROUPE_VAULT_KEYRING_FILE: keyringFile([{ id: 'k1', key: newKey() }]) }
// `serve` delivers nothing: only the orchestrators below do.
const serve = await startTroupe({ natsUrl: nats.url, env: right })
procs.push(serve)

t.test('a keyring that cannot open the secret: no attempt, an error naming it; the right keyring then delivers', async (t) => {
  const H = { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' }
  const e = (await raw(serve.url, 'POST', '/v1/webhooks', { url: 'https://hooks.example.test/in', event_types: ['session.status_idled'] }, H)).json
  const mismatched = await startTroupe({ role: 'orchestrate', natsUrl: nats.url, env: { ...wrong, ...receiver.env } })
  procs.push(mismatched)
  const nc = await connect({ servers: nats.url })
  t.teardown(() => nc.close())
  const { id, bytes } = eventOf()
  await enqueueDelivery(jetstream(nc), e.id, id, bytes)
  const line = await until('the refusal', async () => (await settledLogLines(mismatched)).find((l) => /keyring_mismatch/.test(String(l.msg))), 30_000, 200)
  t.match(line, { level: 50, endpoint: e.id, key: 'k1' })
  t.match(String(line.msg), new RegExp(`cannot open the signing secret of webhook endpoint ${e.id} \\(sealed with key k1\\): the cluster's keyrings differ`))
  t.equal(receiver.got.length, 0, 'no attempt made')
  // A process with the keyring that sealed it takes the delivery over.
  procs.push(await startTroupe({ role: 'orchestrate', natsUrl: nats.url, env: { ...right, ...receiver.env } }))
  await until('the delivery', () => receiver.got.length > 0, 30_000, 100)
  t.equal(receiver.got[0]!.headers['webhook-id'], id)
})
