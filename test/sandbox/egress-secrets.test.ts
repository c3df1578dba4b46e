import { mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import type { EgressSecret } from '../../sandbox/index.js'
import { isolatedOrSkip } from '../helpers/sandbox-backend.js'
import { isolatedBackend } from './_isolated.js'
import { receivers } from '../helpers/secret-receivers.js'

/**
 * A sandbox's secrets (issue 43 point 3) at the sandbox's level: the shell sees placeholders, its egress proxy puts the
 * secret in place of them in headers and bodies of requests to the secret's hosts only, over plain HTTP and over HTTPS
 * (read with the server's CA, which the sandbox trusts; the receiver's own certificate trusted by the proxy through
 * TROUPE_SANDBOX_EGRESS_CA_FILE), and leaves the placeholder unchanged everywhere else.
 */

const gate = isolatedOrSkip()
if (gate.skip) t.test('sandbox secrets', { skip: gate.skip }, () => {})
else await suite()

/** Every file beneath `dir` (links not followed), read as bytes. */
function filesBelow(dir: string): string[] {
  const out: string[] = []
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name)
    const st = statSync(p, { throwIfNoEntry: false })
    if (!st) continue
    if (st.isDirectory()) out.push(...filesBelow(p))
    else if (st.isFile()) out.push(p)
  }
  return out
}

async function suite() {
  // Receivers on loopback, HTTPS with its own certificate: the proxy trusts it only through the operator's setting.
  const { seen, plainPort, tlsPort, cert } = await receivers()
  const backend = isolatedBackend({
    TROUPE_SANDBOX_EGRESS_ALLOW: `127.0.0.1:${plainPort},127.0.0.1:${tlsPort}`,
    TROUPE_SANDBOX_EGRESS_CA_FILE: cert,
  })
  const SECRET = 'sk-live-5ecret-value-of-the-test'
  const secrets: EgressSecret[] = [
    {
      name: 'API_KEY',
      placeholder: 'troupe-secret-0123456789abcdef0123456789abcdef',
      value: SECRET,
      header: true,
      body: true,
      hosts: { type: 'limited', hosts: ['localhost'] },
    },
    {
      name: 'HEADER_ONLY',
      placeholder: 'troupe-secret-ffffffffffffffffffffffffffffffff',
      value: 'hdr-only-value',
      header: true,
      body: false,
      hosts: { type: 'unrestricted' },
    },
  ]
  const dir = mkdtempSync(path.join(os.tmpdir(), 'troupe-secrets-sandbox-'))
  const sb = backend.create({ workdir: dir, network: { type: 'unrestricted' }, secrets })
  t.teardown(() => sb.close())
  const bash = async (command: string) => {
    const r = await sb.run('bash', { command })
    return r.content.map((c) => c.text).join('')
  }
  // Through the proxy even for names NO_PROXY keeps direct (the receivers are on this host, let through by the operator).
  const curl = `curl -sS -m 10 -x "$http_proxy" --noproxy ''`

  t.test('the shell sees placeholders only', async (t) => {
    const env = await bash('env')
    t.match(env, /API_KEY=troupe-secret-0123456789abcdef0123456789abcdef/)
    t.match(env, /SSL_CERT_FILE=\/run\/egress\/ca-certificates.crt/)
    t.notMatch(env, SECRET)
    t.notMatch(env, 'hdr-only-value')
  })

  t.test('plain HTTP: header and body to the secret host, nothing elsewhere', async (t) => {
    seen.length = 0
    const out = await bash(
      [
        `${curl} -H "Authorization: Bearer $API_KEY" --data "key=$API_KEY&h=$HEADER_ONLY" http://localhost:${plainPort}/a`,
        `${curl} -H "Authorization: Bearer $API_KEY" --data "key=$API_KEY" http://127.0.0.1:${plainPort}/b`,
      ].join('; '),
    )
    t.notMatch(out, SECRET)
    const [a, b] = seen
    t.equal(a?.auth, `Bearer ${SECRET}`, 'the header carries the secret to its host')
    t.equal(a?.body, `key=${SECRET}&h=troupe-secret-ffffffffffffffffffffffffffffffff`, 'the body too, and a header-only secret stays a placeholder there')
    t.equal(b?.auth, 'Bearer troupe-secret-0123456789abcdef0123456789abcdef', 'another host gets the placeholder unchanged')
    t.equal(b?.body, 'key=troupe-secret-0123456789abcdef0123456789abcdef')
  })

  t.test('HTTPS: read by the proxy for the secret host, the real certificate checked', async (t) => {
    seen.length = 0
    const out = await bash(
      `${curl} -H "Authorization: Bearer $API_KEY" -H "X-Other: $HEADER_ONLY" --data "key=$API_KEY" https://localhost:${tlsPort}/c; echo "exit $?"`,
    )
    t.match(out, 'received', out)
    t.match(out, 'exit 0')
    t.equal(seen[0]?.auth, `Bearer ${SECRET}`)
    t.equal(seen[0]?.body, `key=${SECRET}`)
    // Without the bundle variables: the system's bundle, covered by ours, is what curl reads.
    const bare = await bash(`env -u SSL_CERT_FILE -u CURL_CA_BUNDLE ${curl} -H "Authorization: Bearer $API_KEY" https://localhost:${tlsPort}/d; echo "exit $?"`)
    t.match(bare, 'exit 0', bare)
    t.equal(seen[1]?.auth, `Bearer ${SECRET}`)
  })

  t.test('a value changed by setSecrets applies to the next request', async (t) => {
    seen.length = 0
    sb.setSecrets(secrets.map((s) => (s.name === 'API_KEY' ? { ...s, value: 'rotated-value' } : s)))
    await bash(`${curl} -H "Authorization: Bearer $API_KEY" http://localhost:${plainPort}/d`)
    t.equal(seen[0]?.auth, 'Bearer rotated-value')
    sb.setSecrets([])
    await bash(`${curl} -H "Authorization: Bearer $API_KEY" http://localhost:${plainPort}/e`)
    t.equal(seen[1]?.auth, 'Bearer troupe-secret-0123456789abcdef0123456789abcdef', 'a secret withdrawn is no longer put in')
  })

  t.test('the secret is nowhere in the session directory', async (t) => {
    for (const f of filesBelow(dir)) t.notOk(readFileSync(f).includes(SECRET), `${f} does not hold it`)
  })
}
