import { createCipheriv, createDecipheriv, createPublicKey, diffieHellman, generateKeyPairSync, hkdfSync, type KeyObject, randomBytes } from 'node:crypto'
import type { EgressSecret } from '../../sandbox/index.js'

/**
 * A session's secrets on their way to the sandbox host that runs its egress proxy (the `prepare` call crosses NATS,
 * which may be unencrypted and which other hosts share): sealed to that host's key, an X25519 key pair it makes at start
 * and holds in memory only (its public half in its roster beat, `secrets_key`). Each sealing takes a fresh key pair of
 * its own; the two make an AES-256-GCM key (HKDF-SHA256), bound to the session and the host, so a sealed copy opens
 * nowhere else and for no other session.
 */
export interface SealedSecrets {
  /** The sealer's one-time public key (SPKI DER, base64). */
  epk: string
  nonce: string
  /** The secrets as JSON, encrypted, its 16-byte tag appended (base64). */
  ct: string
}

const INFO = 'troupe sandbox secrets v1'
const TAG_BYTES = 16

function aesKey(own: KeyObject, theirs: KeyObject, epk: string, recipient: string, aad: string): Buffer {
  const shared = diffieHellman({ privateKey: own, publicKey: theirs })
  return Buffer.from(hkdfSync('sha256', shared, Buffer.from(`${epk}.${recipient}`), Buffer.from(`${INFO}\0${aad}`), 32))
}

const publicKeyOf = (b64: string) => createPublicKey({ key: Buffer.from(b64, 'base64'), format: 'der', type: 'spki' })

/** Seals `secrets` for the holder of `recipient` (a `SecretsKey`'s public key), bound to `aad` (`<session>/<host>`). */
export function sealSecrets(recipient: string, aad: string, secrets: readonly EgressSecret[]): SealedSecrets {
  const mine = generateKeyPairSync('x25519')
  const epk = mine.publicKey.export({ type: 'spki', format: 'der' }).toString('base64')
  const nonce = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', aesKey(mine.privateKey, publicKeyOf(recipient), epk, recipient, aad), nonce)
  cipher.setAAD(Buffer.from(aad))
  const ct = Buffer.concat([cipher.update(JSON.stringify(secrets), 'utf8'), cipher.final(), cipher.getAuthTag()])
  return { epk, nonce: nonce.toString('base64'), ct: ct.toString('base64') }
}

/** A sandbox host's key for secrets sealed to it: made at start, never written anywhere. */
export class SecretsKey {
  private readonly privateKey: KeyObject
  /** SPKI DER, base64: what the host's roster beat shows. */
  readonly publicKey: string

  constructor() {
    const pair = generateKeyPairSync('x25519')
    this.privateKey = pair.privateKey
    this.publicKey = pair.publicKey.export({ type: 'spki', format: 'der' }).toString('base64')
  }

  /** The secrets sealed to this key for `aad`; throws when they were sealed for another key or `aad`, or altered. */
  open(sealed: SealedSecrets, aad: string): EgressSecret[] {
    const ct = Buffer.from(sealed.ct, 'base64')
    if (ct.length < TAG_BYTES) throw new Error('not sealed secrets')
    const decipher = createDecipheriv(
      'aes-256-gcm',
      aesKey(this.privateKey, publicKeyOf(sealed.epk), sealed.epk, this.publicKey, aad),
      Buffer.from(sealed.nonce, 'base64'),
    )
    decipher.setAAD(Buffer.from(aad))
    decipher.setAuthTag(ct.subarray(ct.length - TAG_BYTES))
    const plain = Buffer.concat([decipher.update(ct.subarray(0, ct.length - TAG_BYTES)), decipher.final()]).toString('utf8')
    return JSON.parse(plain) as EgressSecret[]
  }
}
