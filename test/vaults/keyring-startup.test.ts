import t from 'tap'
import { startNats } from '../helpers/nats.js'
import { stack } from '../helpers/stack.js'
import { startTroupe } from '../helpers/troupe.js'
import { until } from '../helpers/wait.js'
import { failure, isError } from '../sessions/_helpers.js'
import { keyringFile } from './_helpers.js'

t.test('a malformed keyring file stops start-up, naming the file and the problem', async (t) => {
  const nats = await startNats()
  t.teardown(() => nats.stop())
  const bad = keyringFile([{ id: 'k1', key: Buffer.alloc(16).toString('base64') }])
  for (const role of ['serve', 'orchestrate'] as const) {
    const err = await failure(startTroupe({ role, natsUrl: nats.url, env: { TROUPE_VAULT_KEYRING_FILE: bad } }))
    t.match(err.message, /troupe exited with 1/, `${role}: exits`)
    t.match(err.message, `troupe: TROUPE_VAULT_KEYRING_FILE=${bad}: keys[0].key (id "k1") is 16 bytes; AES-256 needs exactly 32`, `${role}: says why`)
  }
  const missing = await failure(startTroupe({ natsUrl: nats.url, env: { TROUPE_VAULT_KEYRING_FILE: '/nonexistent/keyring.json' } }))
  t.match(missing.message, /TROUPE_VAULT_KEYRING_FILE=\/nonexistent\/keyring\.json: cannot be read \(ENOENT\)/)
})

t.test('without a keyring: start-up says vaults are off; writes 422, reads work', async (t) => {
  const s = await stack()
  await until('the start-up block', () => /keyring/.test(s.troupe.stdout()), 10_000)
  t.match(s.troupe.stdout(), /keyring\s+none: vaults and webhooks are off \(set TROUPE_VAULT_KEYRING_FILE\)/)
  t.match(s.troupe.logs(), /TROUPE_VAULT_KEYRING_FILE is not set: vaults and webhooks are off/)
  isError(t, await failure(s.client.beta.vaults.create({ display_name: 'x' })), 422, 'invalid_request_error', /operator keyring/, 'keyring_unavailable')
  t.same((await s.client.beta.vaults.list()).data, [], 'lists work')
  isError(t, await failure(s.client.beta.vaults.retrieve('vlt_01NOSUCHVAULT0000000000000')), 404, 'not_found_error', /Vault/)
})
