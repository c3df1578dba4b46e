import type { MsgHdrs } from '@nats-io/transport-node'
import { decode } from '../../protocol/codec.js'

/** How a payload was read: the marker a reader needs to tell a decoded value from text. */
export type Encoding = 'msgpack' | 'json' | 'text' | 'base64' | 'empty'

const utf8 = new TextDecoder('utf-8', { fatal: true })

/**
 * Actor bodies are msgpack, stored events JSON, some messages plain text. A whole payload that is one msgpack
 * value is msgpack: text of two or more bytes never is (its first byte is a complete value and the rest is
 * left over, which the decoder refuses), so only a single ASCII byte is read as text rather than a small integer.
 */
export function decodePayload(bytes: Uint8Array): { encoding: Encoding; data: unknown } {
  if (bytes.length === 0) return { encoding: 'empty', data: null }
  if (!(bytes.length === 1 && bytes[0]! >= 0x20 && bytes[0]! < 0x7f)) {
    try {
      return { encoding: 'msgpack', data: decode(bytes) }
    } catch {}
  }
  let text: string
  try {
    text = utf8.decode(bytes)
  } catch {
    return { encoding: 'base64', data: Buffer.from(bytes).toString('base64') }
  }
  try {
    return { encoding: 'json', data: JSON.parse(text) }
  } catch {
    return { encoding: 'text', data: text }
  }
}

/** Headers as a plain object: a value per name, an array where a name repeats. */
export function headersObject(h: MsgHdrs): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {}
  for (const [k, v] of h) out[k] = v.length === 1 ? v[0]! : v
  return out
}

/** JSON.stringify for decoded msgpack: binary as `{"base64": …}` (not a list of bytes), big integers as strings. */
export function toJsonLine(value: unknown): string {
  return JSON.stringify(value, function (this: Record<string, unknown>, key, v) {
    const raw = this[key]
    if (raw instanceof Uint8Array) return { base64: Buffer.from(raw).toString('base64') }
    if (typeof v === 'bigint') return v.toString()
    return v
  })
}
