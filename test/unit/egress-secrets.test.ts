import { randomBytes } from 'node:crypto'
import { mkdtempSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { Keyring } from '../../actors/kit/index.js'
import { secretPlaceholder } from '../../actors/vault/index.js'
import { SecretsKey } from '../../actors/workdir/index.js'
import { loadSecrets } from '../../actors/workdir/in-process.js'
import { sealSecrets } from '../../actors/workdir/sealed-secrets.js'
import { bodyPairs, type EgressSecret, injectHeaders, secretsReach } from '../../sandbox/egress/secrets.js'
import { readUpstreamCa } from '../../sandbox/egress/upstream-ca.js'
import { readSandboxSetting } from '../../sandbox/index.js'

/** The pieces of issue 43 point 3 that need no sandbox: injection rules, sealing to a sandbox host, placeholders. */

const P1 = `troupe-secret-${'1'.repeat(32)}`
const P2 = `troupe-secret-${'2'.repeat(32)}`
const secrets: EgressSecret[] = [
  { name: 'A', placeholder: P1, value: 'value-a', header: true, body: false, hosts: { type: 'limited', hosts: ['api.example.com', '*.example.org'] } },
  { name: 'B', placeholder: P2, value: 'value-b', header: false, body: true, hosts: { type: 'unrestricted' } },
]

t.test('headers: a secret goes only to its hosts, in every value holding its placeholder', async (t) => {
  const h = { authorization: `Bearer ${P1}`, 'x-both': `${P1}:${P2}`, 'x-list': [`a=${P1}`, 'b=1'], 'x-none': 'plain' }
  injectHeaders(secrets, h, 'api.example.com')
  t.same(h, { authorization: 'Bearer value-a', 'x-both': `value-a:${P2}`, 'x-list': ['a=value-a', 'b=1'], 'x-none': 'plain' }, 'B is body-only')
  const other = { authorization: `Bearer ${P1}` }
  injectHeaders(secrets, other, 'example.org')
  t.same(other, { authorization: `Bearer ${P1}` }, 'a wildcard matches strict subdomains only')
  const sub = { authorization: `Bearer ${P1}` }
  injectHeaders(secrets, sub, 'x.example.org')
  t.same(sub, { authorization: 'Bearer value-a' })
  const broken = { a: P1 }
  injectHeaders([{ ...secrets[0]!, value: 'line\r\nInjected: 1' }], broken, 'api.example.com')
  t.same(broken, { a: P1 }, 'a value with a line break is never put in a header')
  t.ok(secretsReach(secrets, 'anything.test'), 'an unrestricted credential reaches every host')
  t.notOk(secretsReach(secrets.slice(0, 1), 'evil.example.com'))
})

t.test('bodies: the pairs of the secrets meant for the host and for bodies', async (t) => {
  t.same(
    bodyPairs(secrets, 'api.example.com')?.map((p) => [p.sentinel.toString(), p.realValue.toString()]),
    [[P2, 'value-b']],
  )
  t.equal(bodyPairs(secrets.slice(0, 1), 'api.example.com'), undefined, 'a header-only secret: no body pass')
})

t.test('secrets sealed to a sandbox host open there only, for that session', async (t) => {
  const host = new SecretsKey()
  const sealed = sealSecrets(host.publicKey, 'sesn_1/host-a', secrets)
  t.notMatch(JSON.stringify(sealed), /value-a|value-b/, 'nothing in clear')
  t.same(host.open(sealed, 'sesn_1/host-a'), secrets)
  t.throws(() => host.open(sealed, 'sesn_2/host-a'), 'another session')
  t.throws(() => host.open(sealed, 'sesn_1/host-b'), 'another host')
  t.throws(() => new SecretsKey().open(sealed, 'sesn_1/host-a'), "another host's key")
  const ct = Buffer.from(sealed.ct, 'base64')
  ct[0]! ^= 1
  t.throws(() => host.open({ ...sealed, ct: ct.toString('base64') }, 'sesn_1/host-a'), 'altered')
})

t.test('placeholders: unguessable, the same for a session and name with the same keyring', async (t) => {
  const key = randomBytes(32)
  const a = new Keyring([{ id: 'k1', key }])
  const b = new Keyring([{ id: 'k1', key }])
  const p = secretPlaceholder(a, 'sesn_1', 'API_KEY')
  t.match(p, /^troupe-secret-[0-9a-f]{32}$/)
  t.equal(secretPlaceholder(b, 'sesn_1', 'API_KEY'), p, 'another host with the same keyring')
  t.not(secretPlaceholder(a, 'sesn_2', 'API_KEY'), p, 'another session')
  t.not(secretPlaceholder(a, 'sesn_1', 'OTHER'), p, 'another name')
  t.not(secretPlaceholder(new Keyring([{ id: 'k1', key: randomBytes(32) }]), 'sesn_1', 'API_KEY'), p, 'another keyring')
})

t.test('TROUPE_SANDBOX_EGRESS_CA_FILE: read, or a clear error naming it', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'troupe-upstream-ca-'))
  const junk = path.join(dir, 'junk.pem')
  writeFileSync(junk, 'not a certificate')
  t.throws(() => readUpstreamCa(path.join(dir, 'missing.pem')), /TROUPE_SANDBOX_EGRESS_CA_FILE: cannot read .*missing\.pem \(ENOENT\)/)
  t.throws(() => readUpstreamCa(junk), /TROUPE_SANDBOX_EGRESS_CA_FILE: .*junk\.pem holds no PEM certificate/)
  t.equal(readSandboxSetting({ TROUPE_SANDBOX_EGRESS_CA_FILE: ' /x.pem ' }).egress.upstreamCaFile, '/x.pem')
  t.equal(readSandboxSetting({}).egress.upstreamCaFile, undefined)
})

t.test('vaults that cannot be read refuse the tool (a sandbox made without them would lack their variables)', async (t) => {
  const r = await loadSecrets(async () => {
    throw new Error('TIMEOUT')
  })
  t.match(r, {
    refused: { kind: 'refused', result: { is_error: true, content: [{ text: /vault credentials could not be read \(TIMEOUT\); the tool did not run/ }] } },
  })
  t.same(await loadSecrets(async () => secrets), { secrets })
})
