import t from 'tap'
import { canonicalHost, policyAllows, widened } from '../../sandbox/egress/policy.js'
import { AddressJudge } from '../../sandbox/egress/proxy.js'

t.test('a limited policy matches exact names and strict subdomains of wildcards, case-insensitively', async (t) => {
  const p = { type: 'limited' as const, hosts: ['API.example.com', '*.pkg.dev'] }
  t.ok(policyAllows(p, canonicalHost('api.example.com.')))
  t.notOk(policyAllows(p, 'example.com'))
  t.notOk(policyAllows(p, 'x.api.example.com'), 'an exact name admits no subdomain')
  t.ok(policyAllows(p, 'a.pkg.dev'))
  t.ok(policyAllows(p, 'a.b.pkg.dev'))
  t.notOk(policyAllows(p, 'pkg.dev'), 'a wildcard matches strict subdomains only')
  t.notOk(policyAllows(p, 'evilpkg.dev'))
  t.notOk(policyAllows({ type: 'limited', hosts: ['*.0.1'] }, '127.0.0.1'), 'a wildcard never matches an address')
  t.ok(policyAllows({ type: 'unrestricted' }, 'anything.example'))
  t.same(widened(p, ['registry.npmjs.org', '*.pkg.dev']), { type: 'limited', hosts: ['API.example.com', '*.pkg.dev', 'registry.npmjs.org'] })
  t.same(widened({ type: 'unrestricted' }, ['x']), { type: 'unrestricted' })
})

t.test("the address judge refuses the host's own, link-local and metadata addresses, with the operator's exceptions", async (t) => {
  const judge = new AddressJudge({ allowAddresses: ['127.0.0.1:8080', '10.1.0.0/16'] })
  for (const a of ['127.0.0.1', '127.9.9.9', '::1', '0.0.0.0', '169.254.169.254', 'fe80::1', '::ffff:127.0.0.1', '224.0.0.1', '100.100.100.200']) {
    t.notOk(judge.permits(a, 80), `${a} refused`)
  }
  t.ok(judge.permits('127.0.0.1', 8080), 'the operator allowed this address and port')
  t.notOk(judge.permits('127.0.0.1', 8081), 'not another port')
  t.ok(judge.permits('93.184.215.14', 443), 'a public address')
  t.ok(judge.permits('10.0.0.1', 80), 'private ranges: what the host reaches')
})
