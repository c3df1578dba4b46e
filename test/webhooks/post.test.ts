import { readFileSync } from 'node:fs'
import type { IncomingMessage } from 'node:http'
import https from 'node:https'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { NonPublicAddress, nonPublic, publicAddress } from '../../actors/kit/public-address.js'
import { post } from '../../actors/webhook/post.js'

/**
 * One delivery attempt (actors/webhook/post.ts) and the address rules it applies (address.ts): every address class,
 * checked at connect time through an injected resolver; a local HTTPS receiver with a certificate the test trusts,
 * reached through the development host mapping.
 */

const cert = readFileSync(new URL('../fixtures/webhook-receiver.crt', import.meta.url))
const key = readFileSync(new URL('../fixtures/webhook-receiver.key', import.meta.url))
const HOST = 'hooks.example.test'

t.test('only public unicast addresses pass', async (t) => {
  const refused: Record<string, string> = {
    '10.0.0.1': 'private',
    '172.16.5.4': 'private',
    '192.168.1.1': 'private',
    '100.64.0.1': 'carrierGradeNat',
    '127.0.0.1': 'loopback',
    '127.8.9.10': 'loopback',
    '169.254.169.254': 'linkLocal',
    '0.0.0.0': 'unspecified',
    '224.0.0.1': 'multicast',
    '255.255.255.255': 'broadcast',
    '240.0.0.1': 'reserved',
    '192.0.2.1': 'reserved',
    '::1': 'loopback',
    '::': 'unspecified',
    'fe80::1': 'linkLocal',
    'fd12:3456::1': 'uniqueLocal',
    '::ffff:127.0.0.1': 'ipv4Mapped',
    '::ffff:8.8.8.8': 'ipv4Mapped',
    '64:ff9b::a00:1': 'rfc6052',
    '2002:7f00:1::1': '6to4',
    '2001::1': 'teredo',
    'ff02::1': 'multicast',
    '2001:db8::1': 'reserved',
    '100::1': 'discard',
  }
  for (const [address, why] of Object.entries(refused)) t.equal(nonPublic(address), why, address)
  for (const address of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111']) t.equal(nonPublic(address), undefined, address)
  t.equal(nonPublic('example.com'), 'not an IP address')
})

t.test('a name is refused when any address it resolves to is not public', async (t) => {
  t.same(await publicAddress('a.test', async () => ['8.8.8.8', '1.1.1.1']), { address: '8.8.8.8', family: 4 }, 'the first, pinned')
  t.same(await publicAddress('a.test', async () => ['2606:4700:4700::1111']), { address: '2606:4700:4700::1111', family: 6 })
  const rebinding = await publicAddress('a.test', async () => ['8.8.8.8', '10.0.0.1']).catch((e) => e)
  t.type(rebinding, NonPublicAddress, 'a rebinding answer with one private address')
  t.match(rebinding, { hostname: 'a.test', address: '10.0.0.1', why: 'private' })
  await t.rejects(
    publicAddress('a.test', async () => []),
    /resolves to no address/,
  )
})

/** A receiver answering each request by `answer`, counting what it got. */
async function receiver(t: any, answer: (req: IncomingMessage, res: any) => void) {
  const got: Array<{ path: string; headers: IncomingMessage['headers']; body: string }> = []
  const server = https.createServer({ cert, key }, (req, res) => {
    let body = ''
    req.on('data', (c) => (body += c))
    req.on('end', () => {
      got.push({ path: req.url ?? '', headers: req.headers, body })
      answer(req, res)
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise((r) => server.close(r)))
  const port = (server.address() as AddressInfo).port
  const devHosts = new Map([[HOST, { address: '127.0.0.1', port }]])
  return { got, devHosts, server }
}

const noDns = async () => {
  throw new Error('resolver must not be asked for a mapped host')
}

t.test('a 2xx delivers the exact bytes with the given headers', async (t) => {
  const r = await receiver(t, (_req, res) => res.writeHead(204).end())
  const body = Buffer.from('{"type":"event","id":"whe_1"}')
  const out = await post(`https://${HOST}/hook?x=1`, body, { 'webhook-id': 'whe_1' }, { resolve: noDns, devHosts: r.devHosts, timeoutMs: 5000, ca: cert })
  t.same(out, { kind: 'delivered', status: 204 })
  t.equal(r.got.length, 1)
  t.equal(r.got[0]!.path, '/hook?x=1')
  t.equal(r.got[0]!.body, body.toString())
  t.equal(r.got[0]!.headers['webhook-id'], 'whe_1')
  t.equal(r.got[0]!.headers['content-type'], 'application/json')
  t.equal(r.got[0]!.headers.host, HOST, 'the Host header is the endpoint’s host name')
})

t.test('a 3xx is reported, never followed', async (t) => {
  const r = await receiver(t, (req, res) => {
    if (req.url === '/hook') res.writeHead(302, { location: `https://${HOST}/elsewhere` }).end()
    else res.writeHead(200).end()
  })
  const out = await post(`https://${HOST}/hook`, Buffer.from('{}'), {}, { resolve: noDns, devHosts: r.devHosts, timeoutMs: 5000, ca: cert })
  t.same(out, { kind: 'redirected', status: 302 })
  t.same(
    r.got.map((g) => g.path),
    ['/hook'],
  )
})

t.test('a 5xx, a 4xx, an untrusted certificate and a receiver that never answers fail the attempt', async (t) => {
  let status = 503
  const r = await receiver(t, (_req, res) => {
    if (status) res.writeHead(status).end('nope')
  })
  const send = (o: object = {}) => post(`https://${HOST}/h`, Buffer.from('{}'), {}, { resolve: noDns, devHosts: r.devHosts, timeoutMs: 500, ca: cert, ...o })
  t.same(await send(), { kind: 'failed', status: 503, why: 'HTTP 503' })
  status = 410
  t.same(await send(), { kind: 'failed', status: 410, why: 'HTTP 410' })
  t.match(await send({ ca: undefined }), { kind: 'failed', why: /certificate/ })
  status = 0
  const t0 = Date.now()
  t.match(await send(), { kind: 'failed', why: /no answer within 500 ms/ })
  t.ok(Date.now() - t0 < 3000, 'bounded by its timeout')
})

t.test('a host name resolving to a non-public address is refused before any connection', async (t) => {
  const r = await receiver(t, (_req, res) => res.writeHead(200).end())
  const out = await post(`https://other.example.test/h`, Buffer.from('{}'), {}, { resolve: async () => ['127.0.0.1'], timeoutMs: 5000, ca: cert })
  t.match(out, { kind: 'refused', why: /other\.example\.test resolves to 127\.0\.0\.1 \(loopback\)/ })
  t.equal(r.got.length, 0)
  t.match(await post(`https://other.example.test/h`, Buffer.from('{}'), {}, { resolve: async () => ['169.254.169.254'], timeoutMs: 5000 }), {
    kind: 'refused',
    why: /linkLocal/,
  })
})
