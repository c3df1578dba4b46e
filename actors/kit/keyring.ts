import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'

/**
 * The operator keyring (`TROUPE_VAULT_KEYRING_FILE`): AES-256-GCM keys by id. The last key listed seals; every key
 * listed opens, so keys rotate by appending one and restarting (records sealed before keep their key id and still
 * open). Secrets are sealed with the id of the record that holds them as associated data, so a ciphertext copied
 * into another record does not open.
 */

/** A secret as stored: the id of the key that sealed it, the 12-byte nonce and the ciphertext with its 16-byte tag appended (base64). */
export interface Sealed {
  kid: string
  nonce: string
  ct: string
}

/** A key id: safe in logs and in a stored record, never a path or a subject. */
const KEY_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/
const NONCE_BYTES = 12
const TAG_BYTES = 16

export class Keyring {
  private readonly keys: ReadonlyMap<string, Buffer>
  /** The id of the key new secrets are sealed with (the last listed). */
  readonly current: string

  constructor(keys: ReadonlyArray<{ id: string; key: Buffer }>) {
    if (!keys.length) throw new Error('a keyring needs at least one key')
    this.keys = new Map(keys.map((k) => [k.id, k.key]))
    this.current = keys[keys.length - 1]!.id
  }

  /** The key ids, oldest first (for the start-up line; never the keys). */
  get ids(): string[] {
    return [...this.keys.keys()]
  }

  /**
   * Each key's fingerprint by id: the first 16 hex digits of a SHA-256 over a label and the key, which tells two
   * keyrings apart without saying anything of the keys.
   */
  get fingerprints(): Record<string, string> {
    const out: Record<string, string> = {}
    for (const [id, key] of this.keys) out[id] = createHash('sha256').update('troupe keyring fingerprint\0').update(key).digest('hex').slice(0, 16)
    return out
  }

  /**
   * A value nobody without the keyring can compute or guess, the same on every host with this keyring: an HMAC-SHA256
   * with the newest key over `label` and `data` (hex). For names that must stay stable across hosts without being
   * stored (a session's secret placeholders); it changes when a newer key is added.
   */
  derive(label: string, data: string): string {
    return createHmac('sha256', this.keys.get(this.current)!).update(`troupe derive ${label}\0${data}`).digest('hex')
  }

  /** Seals `plaintext` with the newest key, bound to `aad` (the id of the record that holds it). */
  seal(plaintext: string, aad: string): Sealed {
    const nonce = randomBytes(NONCE_BYTES)
    const cipher = createCipheriv('aes-256-gcm', this.keys.get(this.current)!, nonce)
    cipher.setAAD(Buffer.from(aad, 'utf8'))
    const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()])
    return { kid: this.current, nonce: nonce.toString('base64'), ct: ct.toString('base64') }
  }

  /** The plaintext of `sealed`; throws when its key is not in the ring, or it was not sealed for `aad`, or was altered. */
  open(sealed: Sealed, aad: string): string {
    const key = this.keys.get(sealed.kid)
    if (!key) throw new Error(`sealed with key ${sealed.kid}, which the keyring does not hold`)
    const nonce = Buffer.from(sealed.nonce, 'base64')
    const ct = Buffer.from(sealed.ct, 'base64')
    if (nonce.length !== NONCE_BYTES || ct.length < TAG_BYTES) throw new Error('not a sealed secret')
    const decipher = createDecipheriv('aes-256-gcm', key, nonce)
    decipher.setAAD(Buffer.from(aad, 'utf8'))
    decipher.setAuthTag(ct.subarray(ct.length - TAG_BYTES))
    return Buffer.concat([decipher.update(ct.subarray(0, ct.length - TAG_BYTES)), decipher.final()]).toString('utf8')
  }
}

/** A keyring file that cannot be used: the message names the file and the problem. */
export class KeyringError extends Error {}

/**
 * Reads and checks the keyring file `{"keys":[{"id":"k1","key":"<base64 of exactly 32 bytes>"}]}`: every problem
 * (unreadable, not JSON, no keys, a key not 32 bytes, an id twice or not a safe token) throws a KeyringError naming
 * the file. The message never holds a key.
 */
export function loadKeyring(file: string): Keyring {
  const bad = (problem: string) => new KeyringError(`TROUPE_VAULT_KEYRING_FILE=${file}: ${problem}`)
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    throw bad(`cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`)
  }
  let doc: unknown
  try {
    doc = JSON.parse(text)
  } catch {
    throw bad('is not JSON; expected {"keys":[{"id":"k1","key":"<base64 of 32 bytes>"}]}')
  }
  const list = (doc as { keys?: unknown } | null)?.keys
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc) || !Array.isArray(list)) {
    throw bad('expected an object {"keys":[{"id":"k1","key":"<base64 of 32 bytes>"}]}')
  }
  if (!list.length) throw bad('"keys" is empty; list at least one key')
  const keys: Array<{ id: string; key: Buffer }> = []
  for (const [i, k] of list.entries()) {
    const at = `keys[${i}]`
    if (typeof k !== 'object' || k === null || Array.isArray(k)) throw bad(`${at} must be an object {"id", "key"}`)
    const { id, key, ...rest } = k as Record<string, unknown>
    const extra = Object.keys(rest)
    if (extra.length) throw bad(`${at} has an unknown field "${extra[0]}" (only "id" and "key")`)
    if (typeof id !== 'string' || !KEY_ID.test(id)) throw bad(`${at}.id must be 1 to 64 letters, digits, "_", "-" or ".", starting with a letter or digit`)
    if (keys.some((x) => x.id === id)) throw bad(`${at}.id "${id}" is listed twice`)
    if (typeof key !== 'string' || !/^[A-Za-z0-9+/]+={0,2}$/.test(key) || key.length % 4 !== 0) throw bad(`${at}.key (id "${id}") is not base64`)
    const bytes = Buffer.from(key, 'base64')
    if (bytes.length !== 32) throw bad(`${at}.key (id "${id}") is ${bytes.length} bytes; AES-256 needs exactly 32 (make one with: openssl rand -base64 32)`)
    keys.push({ id, key: bytes })
  }
  return new Keyring(keys)
}
