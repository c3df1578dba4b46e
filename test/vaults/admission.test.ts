import t from 'tap'
import { raw } from '../helpers/troupe.js'
import { agentAndEnv, failure, isError, sessionStack } from '../sessions/_helpers.js'
import { HELLO } from '../deployments/_helpers.js'
import { keyringFile, newKey } from './_helpers.js'

/** Sessions and deployments naming vaults, on a server with a keyring. */
const s = await sessionStack({ TROUPE_VAULT_KEYRING_FILE: keyringFile([{ id: 'k1', key: newKey() }]) })
const { client } = s
const { agent, env } = await agentAndEnv(client)
const [v1, v2, v3] = await Promise.all(['one', 'two', 'three'].map((n) => client.beta.vaults.create({ display_name: n })))
const archived = await client.beta.vaults.create({ display_name: 'archived' })
await client.beta.vaults.archive(archived.id)
const create = (vault_ids: unknown) => client.beta.sessions.create({ agent: agent.id, environment_id: env.id, vault_ids } as any)

t.test('session vault_ids: kept in order, frozen with the session', async (t) => {
  const session = await create([v3!.id, v1!.id, v2!.id])
  t.same(session.vault_ids, [v3!.id, v1!.id, v2!.id], 'in the order given')
  t.same((await client.beta.sessions.retrieve(session.id)).vault_ids, [v3!.id, v1!.id, v2!.id])
  t.ok((await client.beta.sessions.list()).data.find((x) => x.id === session.id)?.vault_ids.length === 3, 'listed with them')
  const r = await raw(s.url, 'POST', `/v1/sessions/${session.id}`, { vault_ids: [v1!.id] })
  t.equal(r.status, 400, 'vault_ids on update: 400')
  t.match(r.json?.error?.message, /vault_ids cannot be changed/)
  // A vault archived later leaves the session as it was.
  const v4 = await client.beta.vaults.create({ display_name: 'later archived' })
  const kept = await create([v4.id])
  await client.beta.vaults.archive(v4.id)
  t.same((await client.beta.sessions.retrieve(kept.id)).vault_ids, [v4.id])
})

t.test('session vault_ids: missing, archived, empty, malformed and duplicate references refused', async (t) => {
  const before = (await client.beta.sessions.list({ limit: 1000 })).data.length
  isError(
    t,
    await failure(create([v1!.id, 'vlt_01NOSUCHVAULT0000000000000'])),
    404,
    'not_found_error',
    /^vault_ids\[1\]: Vault vlt_01NOSUCHVAULT\w* not found/,
    'vault_not_found',
  )
  isError(t, await failure(create([archived.id])), 400, 'invalid_request_error', /^vault_ids\[0\]: Vault vlt_\w+ is archived/, 'vault_archived')
  isError(t, await failure(create([v1!.id, ''])), 400, 'invalid_request_error', /vault_ids\[1\]/)
  isError(t, await failure(create(['env_x'])), 400, 'invalid_request_error', /vault_ids\[0\] must be an id like vlt_/)
  isError(t, await failure(create([v1!.id, v2!.id, v1!.id])), 400, 'invalid_request_error', /vault_ids\[2\]: vlt_\w+ appears twice \(also at index 0\)/)
  isError(t, await failure(create(v1!.id)), 400, 'invalid_request_error', /vault_ids must be an array/)
  isError(t, await failure(create(null)), 400, 'invalid_request_error', /vault_ids/)
  t.equal((await client.beta.sessions.list({ limit: 1000 })).data.length, before, 'no session was made by a refusal')
  // A deleted vault is a missing one.
  const gone = await client.beta.vaults.create({ display_name: 'gone' })
  await client.beta.vaults.delete(gone.id)
  isError(t, await failure(create([gone.id])), 404, 'not_found_error', /vault_ids\[0\]/)
})

t.test('deployments: vault_ids checked at create, update and at each run', async (t) => {
  const deployments = client.beta.deployments
  const mk = (vault_ids: unknown) => deployments.create({ name: 'd', agent: agent.id, environment_id: env.id, initial_events: HELLO, vault_ids } as any)
  isError(t, await failure(mk([archived.id])), 400, 'invalid_request_error', /vault_ids\[0\]: Vault vlt_\w+ is archived/)
  isError(t, await failure(mk(['vlt_01NOSUCHVAULT0000000000000'])), 404, 'not_found_error', /vault_ids\[0\]/)
  const v = await client.beta.vaults.create({ display_name: 'deployed' })
  const d = await mk([v.id, v1!.id])
  t.same(d.vault_ids, [v.id, v1!.id])
  isError(t, await failure(deployments.update(d.id, { vault_ids: [archived.id] } as any)), 400, 'invalid_request_error', /vault_ids\[0\]/)
  t.same((await deployments.retrieve(d.id)).vault_ids, [v.id, v1!.id], 'a refused update changes nothing')
  const run = await deployments.run(d.id)
  t.equal(run.error, null)
  t.same((await client.beta.sessions.retrieve(run.session_id!)).vault_ids, [v.id, v1!.id], "the run's session has the deployment's vaults")
  await client.beta.vaults.archive(v.id)
  const refused = await deployments.run(d.id)
  t.equal(refused.session_id, null)
  t.equal(refused.error?.type, 'vault_archived_error')
  t.match(refused.error?.message, /vault_ids\[0\]/)
  await client.beta.vaults.delete(v.id)
  t.equal((await deployments.run(d.id)).error?.type, 'vault_not_found_error')
  const cleared = await deployments.update(d.id, { vault_ids: [] } as any)
  t.same(cleared.vault_ids, [])
  t.equal((await deployments.run(d.id)).error, null)
})
