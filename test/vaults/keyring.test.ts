import t from 'tap'
import { Keyring, KeyringError, loadKeyring } from '../../actors/kit/keyring.js'
import { keyringFile, newKey } from './_helpers.js'

t.test('seal and open: AES-256-GCM bound to the record id', async (t) => {
  const ring = loadKeyring(keyringFile([{ id: 'k1', key: newKey() }]))
  const sealed = ring.seal('hunter2', 'vcrd_1/token')
  t.equal(sealed.kid, 'k1')
  t.equal(Buffer.from(sealed.nonce, 'base64').length, 12, 'a 12-byte nonce')
  t.equal(Buffer.from(sealed.ct, 'base64').length, 'hunter2'.length + 16, 'the ciphertext with its 16-byte tag')
  t.notMatch(JSON.stringify(sealed), /hunter2/)
  t.equal(ring.open(sealed, 'vcrd_1/token'), 'hunter2')
  t.not(ring.seal('hunter2', 'vcrd_1/token').nonce, sealed.nonce, 'a fresh nonce each time')
  t.throws(() => ring.open(sealed, 'vcrd_2/token'), 'another record id (a ciphertext moved) does not open')
  t.throws(() => ring.open(sealed, 'vcrd_1/secret_value'), 'another field does not open')
  const ct = Buffer.from(sealed.ct, 'base64')
  ct[0]! ^= 1
  t.throws(() => ring.open({ ...sealed, ct: ct.toString('base64') }, 'vcrd_1/token'), 'an altered ciphertext does not open')
  t.throws(() => ring.open({ ...sealed, kid: 'k9' }, 'vcrd_1/token'), /k9/, 'a key not in the ring')
})

t.test('rotation: a key appended seals from then on; every key listed opens', async (t) => {
  const k1 = newKey()
  const old = loadKeyring(keyringFile([{ id: 'k1', key: k1 }]))
  const before = old.seal('first', 'vcrd_a/token')
  const ring = loadKeyring(
    keyringFile([
      { id: 'k1', key: k1 },
      { id: 'k2', key: newKey() },
    ]),
  )
  t.equal(ring.current, 'k2')
  t.same(ring.ids, ['k1', 'k2'])
  t.equal(ring.open(before, 'vcrd_a/token'), 'first', 'a secret sealed before the rotation still opens')
  const after = ring.seal('second', 'vcrd_b/token')
  t.equal(after.kid, 'k2')
  t.throws(() => old.open(after, 'vcrd_b/token'), 'the old ring cannot open what the new key sealed')
})

t.test('a malformed keyring file is refused with the file and the problem named', async (t) => {
  const cases: Array<[string, string | Array<{ id: string; key: string }>, RegExp]> = [
    ['not JSON', '{"keys": [', /is not JSON/],
    ['not an object', '[1,2]', /expected an object/],
    ['no keys field', '{}', /expected an object/],
    ['empty keys', '{"keys":[]}', /"keys" is empty/],
    ['a key not base64', [{ id: 'k1', key: 'not base64!' }], /keys\[0\]\.key \(id "k1"\) is not base64/],
    ['a key of 16 bytes', [{ id: 'k1', key: Buffer.alloc(16).toString('base64') }], /is 16 bytes; AES-256 needs exactly 32/],
    ['a key of 33 bytes', [{ id: 'k1', key: Buffer.alloc(33).toString('base64') }], /is 33 bytes/],
    [
      'an id twice',
      [
        { id: 'k1', key: newKey() },
        { id: 'k1', key: newKey() },
      ],
      /keys\[1\]\.id "k1" is listed twice/,
    ],
    ['an unsafe id', [{ id: 'k 1/..', key: newKey() }], /keys\[0\]\.id must be/],
    ['an empty id', [{ id: '', key: newKey() }], /keys\[0\]\.id must be/],
    ['a field too many', `{"keys":[{"id":"k1","key":"${newKey()}","note":"x"}]}`, /unknown field "note"/],
  ]
  for (const [what, content, why] of cases) {
    const file = keyringFile(content)
    const err = t.throws(() => loadKeyring(file), what) as unknown as Error
    t.ok(err instanceof KeyringError, `${what}: a KeyringError`)
    t.match(err.message, new RegExp(`^TROUPE_VAULT_KEYRING_FILE=${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: `), `${what}: names the file`)
    t.match(err.message, why, what)
  }
  const err = t.throws(() => loadKeyring('/nonexistent/keyring.json')) as unknown as Error
  t.match(err.message, /\/nonexistent\/keyring\.json: cannot be read \(ENOENT\)/)
  const key = newKey()
  const leak = t.throws(() =>
    loadKeyring(
      keyringFile([
        { id: 'k1', key },
        { id: 'k1', key },
      ]),
    ),
  ) as unknown as Error
  t.notMatch(leak.message, key, 'the message never holds a key')
  t.throws(() => new Keyring([]), 'a keyring of no keys')
})
