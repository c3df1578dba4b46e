import { mkdtempSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { isolatedOrSkip } from '../helpers/sandbox-backend.js'
import { settledLogLines } from '../helpers/troupe.js'
import { agentAndEnv, collect, history, isIdle, sessionStack } from '../sessions/_helpers.js'
import { filesBeneath, keyringFile, newKey } from './_helpers.js'
import { CURL, holds, LOSES, OTHER, ROTATED, receivers, SHADOW, vaults, WINS } from './_env-secrets.js'

/**
 * `environment_variable` vault credentials in use (issue 43 point 3), through real sessions whose fake model scripts
 * bash in an isolated sandbox: the variable holds a placeholder inside; the session's egress proxy puts the secret in
 * its place in the header and/or body (the credential's `injection_location`) of requests to the credential's hosts,
 * over plain HTTP and HTTPS (the receiver's own certificate trusted by the proxy through TROUPE_SANDBOX_EGRESS_CA_FILE),
 * and nowhere else; the first vault of the session holding a name wins, archived credentials skipped; and the secret
 * is in no event, log line, stored byte (the JetStream store on disk: events, workspace saves, vault records) nor in
 * the sandbox's environment.
 */

async function suite() {
  const { seen, plainPort, tlsPort, cert } = await receivers()
  const s = await sessionStack({
    TROUPE_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'troupe-env-secrets-data-')),
    TROUPE_SANDBOX: 'isolated',
    TROUPE_SANDBOX_EGRESS_ALLOW: `127.0.0.1:${plainPort},127.0.0.1:${tlsPort}`,
    TROUPE_SANDBOX_EGRESS_CA_FILE: cert,
    TROUPE_VAULT_KEYRING_FILE: keyringFile([{ id: 'k1', key: newKey() }]),
    LOG_LEVEL: 'debug',
  })
  const { client } = s
  const { agent, env: environment } = await agentAndEnv(
    client,
    { tools: [{ type: 'agent_toolset_20260401' }] },
    { config: { type: 'cloud', networking: { type: 'unrestricted' } } },
  )
  const vaultIds = await vaults(client)
  const session = await client.beta.sessions.create({ agent: agent.id, environment_id: environment.id, vault_ids: vaultIds } as any)

  async function bash(...commands: string[]): Promise<string[]> {
    s.model.enqueue(...commands.map((command) => ({ steps: [{ type: 'tool_use' as const, name: 'bash', input: { command } }] })), {
      steps: [{ type: 'text', text: 'done' }],
    })
    const stream = await client.beta.sessions.events.stream(session.id)
    await client.beta.sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'go' }] }] } as any)
    const events = await collect(stream, isIdle, 60_000)
    return events.filter((e) => e.type === 'agent.tool_result').map((e) => (e.content as any[]).map((c) => c.text).join(''))
  }
  const curl = CURL
  let placeholder = ''

  t.test('the sandbox sees placeholders: first vault wins, archived skipped', async (t) => {
    const [out] = await bash('env | sort')
    t.same(holds(out!), [], 'no secret in the environment')
    placeholder = /API_KEY=(troupe-secret-[0-9a-f]{32})/.exec(out!)?.[1] ?? ''
    t.ok(placeholder, 'API_KEY holds a placeholder')
    t.match(out, /OTHER_KEY=troupe-secret-[0-9a-f]{32}/)
    t.match(out, /SHADOW_KEY=troupe-secret-[0-9a-f]{32}/)
    t.equal(new Set(out!.match(/troupe-secret-[0-9a-f]{32}/g)).size, 3, 'one placeholder per name')
  })

  t.test('plain HTTP: the secret in header and body to its host, the placeholder elsewhere', async (t) => {
    seen.length = 0
    const [out] = await bash(
      [
        `${curl} -H "Authorization: Bearer $API_KEY" -H "X-Other: $OTHER_KEY" --data "k=$API_KEY&s=$SHADOW_KEY&o=$OTHER_KEY" http://localhost:${plainPort}/allowed`,
        `${curl} -H "Authorization: Bearer $API_KEY" --data "k=$API_KEY" http://127.0.0.1:${plainPort}/elsewhere`,
      ].join('; '),
    )
    t.same(holds(out!), [])
    const allowed = seen.find((x) => x.path === '/allowed')
    const elsewhere = seen.find((x) => x.path === '/elsewhere')
    t.equal(allowed?.auth, `Bearer ${WINS}`, "the first vault's secret, in the header")
    t.equal(allowed?.other, OTHER, 'an unrestricted credential reaches this host too')
    const otherPlaceholder = /o=(troupe-secret-[0-9a-f]{32})/.exec(allowed?.body ?? '')?.[1]
    t.ok(otherPlaceholder, 'a header-only credential stays a placeholder in the body')
    t.equal(
      allowed?.body,
      `k=${WINS}&s=${SHADOW}&o=${otherPlaceholder}`,
      "in the body: the first vault's, and the second vault's SHADOW_KEY (the first one archived)",
    )
    t.equal(elsewhere?.auth, `Bearer ${placeholder}`, 'a host not in its networking gets the placeholder unchanged')
    t.equal(elsewhere?.body, `k=${placeholder}`)
  })

  t.test('HTTPS: the same, the receiver checked against its own certificate', async (t) => {
    seen.length = 0
    const [out] = await bash(
      `${curl} -H "Authorization: Bearer $API_KEY" -H "X-Other: $SHADOW_KEY" --data "k=$API_KEY&s=$SHADOW_KEY" https://localhost:${tlsPort}/tls; echo "exit $?"`,
    )
    t.match(out, 'exit 0', out)
    t.same(holds(out!), [])
    t.equal(seen[0]?.auth, `Bearer ${WINS}`)
    t.match(seen[0]?.other, /^troupe-secret-[0-9a-f]{32}$/, 'a body-only credential stays a placeholder in headers')
    t.equal(seen[0]?.body, `k=${WINS}&s=${SHADOW}`)
  })

  t.test('a rotated value applies from the next tool; an archived one gives way to the next vault', async (t) => {
    const creds = client.beta.vaults.credentials
    const first = (await creds.list(vaultIds[0]!)).data.find((c: any) => c.auth.secret_name === 'API_KEY' && !c.archived_at)!
    await creds.update(first.id, { vault_id: vaultIds[0]!, auth: { type: 'environment_variable', secret_value: ROTATED } } as any)
    seen.length = 0
    await bash(`${curl} -H "Authorization: Bearer $API_KEY" http://localhost:${plainPort}/rotated`)
    t.equal(seen[0]?.auth, `Bearer ${ROTATED}`, 'the new value, same placeholder')
    await creds.archive(first.id, { vault_id: vaultIds[0]! })
    seen.length = 0
    const [out] = await bash(`echo "[$API_KEY]"; ${curl} -H "Authorization: Bearer $API_KEY" http://localhost:${plainPort}/archived`)
    t.match(out, `[${placeholder}]`, "the shell's variable stays until its next sandbox")
    // The placeholder is the session's and the name's: the credential that now wins for the name fills it.
    t.equal(seen[0]?.auth, `Bearer ${LOSES}`, "archived: the second vault's API_KEY is the first active one now")
  })

  t.test('a credential for hosts the limited networking does not reach is told once (credential_host_unreachable_error)', async (t) => {
    const far = await client.beta.vaults.create({ display_name: 'far' })
    const networking = { type: 'limited', allowed_hosts: ['far.example.com', '*.near.example'] }
    const cred = await client.beta.vaults.credentials.create(far.id, {
      auth: { type: 'environment_variable', secret_name: 'FAR_KEY', secret_value: 'SECRET-env-far-2b7d', networking },
    } as any)
    const limited = await client.beta.environments.create({
      name: 'limited',
      config: { type: 'cloud', networking: { type: 'limited', allowed_hosts: ['localhost', '*.near.example'] } },
    } as any)
    const other = await client.beta.sessions.create({ agent: agent.id, environment_id: limited.id, vault_ids: [...vaultIds, far.id] } as any)
    const errors: any[] = []
    for (const text of ['one', 'two']) {
      s.model.enqueue({ steps: [{ type: 'tool_use', name: 'bash', input: { command: 'true' } }] }, { steps: [{ type: 'text', text: 'done' }] })
      const stream = await client.beta.sessions.events.stream(other.id)
      await client.beta.sessions.events.send(other.id, { events: [{ type: 'user.message', content: [{ type: 'text', text }] }] } as any)
      errors.push(...(await collect(stream, isIdle, 60_000)).filter((e) => e.type === 'session.error'))
    }
    t.equal(errors.length, 1, 'told once')
    t.match(errors[0]?.error, {
      type: 'credential_host_unreachable_error',
      credential_id: cred.id,
      vault_id: far.id,
      message: /names far\.example\.com, which this session's limited networking does not let the sandbox reach/,
      retry_status: { type: 'retrying' },
    })
    t.notMatch(errors[0]?.error.message, /near\.example/, 'a host the environment allows is not named')
  })

  t.test('the secret is nowhere else: events, logs, stored bytes, the workspace', async (t) => {
    // The placeholder written into the workspace is saved with it; the secret is not.
    await bash(`echo "API_KEY=$API_KEY" > creds.txt; env > env.txt; cat creds.txt`)
    const events = JSON.stringify(await history(client, session.id))
    t.same(holds(events), [], 'no event holds one')
    t.match(events, placeholder, 'the placeholder is what the events show')
    const logs = (await settledLogLines(s.troupe)).map((l) => JSON.stringify(l)).join('\n')
    t.ok(logs.length > 1000, 'the server logged')
    t.same(holds(logs), [], 'no log line holds one')
    const stored = filesBeneath(s.nats.dir).map((b) => b.toString('latin1'))
    t.ok(
      stored.some((b) => b.includes(placeholder)),
      'the workspace save (with the placeholder) is in the store',
    )
    t.same(
      stored.flatMap((b) => holds(b)),
      [],
      'no byte of the JetStream store holds one',
    )
  })
}

const gate = isolatedOrSkip()
if (gate.skip) t.test('environment_variable credentials', { skip: gate.skip }, () => {})
else await suite()
