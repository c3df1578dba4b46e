import type { Json } from './examples.js'

export type JsonPath = Array<string | number>

/** Every path below the root, parents before children: the places one mutation can go. */
export function paths(value: Json, prefix: JsonPath = []): JsonPath[] {
  const out: JsonPath[] = []
  if (Array.isArray(value)) {
    value.forEach((item, i) => {
      out.push([...prefix, i], ...paths(item, [...prefix, i]))
    })
  } else if (value !== null && typeof value === 'object') {
    for (const [k, item] of Object.entries(value)) out.push([...prefix, k], ...paths(item, [...prefix, k]))
  }
  return out
}

export const pathString = (p: JsonPath) => p.map((s) => (typeof s === 'number' ? `[${s}]` : `.${s}`)).join('') || '(root)'

export function get(value: Json, p: JsonPath): Json | undefined {
  let cur: Json | undefined = value
  for (const seg of p) {
    if (cur === null || typeof cur !== 'object') return undefined
    cur = (cur as Record<string | number, Json>)[seg]
  }
  return cur
}

// A string no example contains: it marks the slot in the serialised body where the raw fragment goes.
const SLOT = '\u0001fuzz-slot\u0001'
const SLOT_JSON = JSON.stringify(SLOT)

/**
 * The example serialised with the value at `p` replaced by `fragment`, a raw JSON text. The fragment is
 * spliced into the text, never parsed, so it can be 100,000 levels deep or not JSON at all.
 */
export function spliced(value: Json, p: JsonPath, fragment: string): string {
  const copy = structuredClone(value)
  if (!p.length) return fragment
  const parent = get(copy, p.slice(0, -1)) as Record<string | number, Json>
  parent[p[p.length - 1]!] = SLOT
  const text = JSON.stringify(copy)
  const at = text.indexOf(SLOT_JSON)
  return text.slice(0, at) + fragment + text.slice(at + SLOT_JSON.length)
}

/** The example with one more key at `p` (an object): unknown fields, and keys that mean something to JS. */
export function withKey(value: Json, p: JsonPath, key: string, fragment: string): string {
  const copy = structuredClone(value)
  const target = p.length ? get(copy, p) : copy
  if (target === null || typeof target !== 'object' || Array.isArray(target)) return spliced(value, p, fragment)
  // Defined as an own property, so `__proto__` becomes a real key in the text rather than a prototype.
  Object.defineProperty(target, key, { value: SLOT, enumerable: true, writable: true, configurable: true })
  const text = JSON.stringify(copy)
  const at = text.indexOf(SLOT_JSON)
  return text.slice(0, at) + fragment + text.slice(at + SLOT_JSON.length)
}
