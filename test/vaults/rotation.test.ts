import t from 'tap'
import { decode } from '../../protocol/codec.js'
import { loadKeyring } from '../../actors/kit/keyring.js'
import '../helpers/keepalive.js'
import { startNats } from '../helpers/nats.js'
import { clientFor, startTroupe } from '../helpers/troupe.js'
import { until } from '../helpers/wait.js'
import { keyringFile, newKey, SECRETS, staticBearer, storedVaultMessages } from './_helpers.js'

t.test('rotation: a key appended and a restart; old secrets still open, new ones sealed with the new key', async (t) => {
  const nats = await startNats()
  t.teardown(() => nats.stop())
  const k1 = { id: 'k1', key: newKey() }
  const first = await startTroupe({ natsUrl: nats.url, env: { TROUPE_VAULT_KEYRING_FILE: keyringFile([k1]) } })
  let client = clientFor(first.url, { maxRetries: 3 })
  const v = await client.beta.vaults.create({ display_name: 'rotating' })
  const old = await client.beta.vaults.credentials.create(v.id, { auth: staticBearer('https://old.example.com/mcp') })
  await first.stop()

  const file = keyringFile([k1, { id: 'k2', key: newKey() }])
  const second = await startTroupe({ natsUrl: nats.url, env: { TROUPE_VAULT_KEYRING_FILE: file } })
  t.teardown(() => second.killNow())
  await until('the start-up block', () => /keyring/.test(second.stdout()), 10_000)
  t.match(second.stdout(), /keyring\s+\S+ \(2 keys; new secrets sealed with k2\)/)
  client = clientFor(second.url, { maxRetries: 3 })
  t.same(await client.beta.vaults.credentials.retrieve(old.id, { vault_id: v.id }), old, 'the old credential reads as before')
  const fresh = await client.beta.vaults.credentials.create(v.id, { auth: staticBearer('https://new.example.com/mcp', SECRETS.rotated) })

  const ring = loadKeyring(file)
  const record = (await storedVaultMessages(nats.url)).filter((m) => m.subject === `$KV.troupe_vaults.vault.${v.id}`).at(-1)!
  const state = decode<any>(record.data)
  const byId = new Map<string, any>(state.credentials.map((c: any) => [c.credential.id, c.secrets.token]))
  t.equal(byId.get(old.id).kid, 'k1', 'the old secret keeps the key that sealed it')
  t.equal(ring.open(byId.get(old.id), `${old.id}/token`), SECRETS.token, 'and opens with the rotated ring')
  t.equal(byId.get(fresh.id).kid, 'k2', 'a new secret is sealed with the newest key')
  t.equal(ring.open(byId.get(fresh.id), `${fresh.id}/token`), SECRETS.rotated)
  t.throws(() => ring.open(byId.get(fresh.id), `${old.id}/token`), "a secret moved to another credential's record does not open")
})
