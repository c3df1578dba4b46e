import { fail } from '../protocol/errors/fail.js'

/**
 * Bounds on a parsed body's shape, checked before any schema runs. arktype reports every member of a wrong
 * collection and every unknown key one by one: half a million keys took 22 s of CPU and a gigabyte of memory
 * to refuse. No request of the API comes near these (metadata holds 16 pairs, content arrays 1,000 blocks).
 */
export const MAX_OBJECT_KEYS = 1000
export const MAX_ARRAY_ITEMS = 10_000

/**
 * Refuses a body with an object of more than MAX_OBJECT_KEYS keys, an array of more than MAX_ARRAY_ITEMS
 * items, or a `__proto__` key anywhere (msgpack renames it on the way to the actor and plain objects cannot
 * hold it: it would be stored as something else, or dropped). One pass over the value with an explicit
 * stack: the depth check (json-depth.ts) ran before, but this needs no recursion either way.
 */
export function checkShape(root: unknown): void {
  // Each entry: a container and where it is, as parent entry and key (the path is only built for a message).
  const stack: Array<[value: object, parent: number, key: string | number]> = [[root as object, -1, '']]
  const where = (i: number, key?: string | number): string => {
    const parts: Array<string | number> = key === undefined ? [] : [key]
    for (let j = i; j > 0; j = stack[j]![1]) parts.unshift(stack[j]![2])
    return parts.length ? parts.map((p, k) => (typeof p === 'number' ? `[${p}]` : k === 0 ? p : `.${p}`)).join('') : 'the body'
  }
  for (let i = 0; i < stack.length; i++) {
    const [v] = stack[i]!
    if (Array.isArray(v)) {
      if (v.length > MAX_ARRAY_ITEMS) throw fail('array_too_long', where(i), v.length, MAX_ARRAY_ITEMS)
      for (let k = 0; k < v.length; k++) {
        const item: unknown = v[k]
        if (item !== null && typeof item === 'object') stack.push([item, i, k])
      }
    } else {
      const keys = Object.keys(v)
      if (keys.length > MAX_OBJECT_KEYS) throw fail('too_many_keys', where(i), keys.length, MAX_OBJECT_KEYS)
      for (const k of keys) {
        if (k === '__proto__') throw fail('proto_key', where(i, k))
        const item: unknown = (v as Record<string, unknown>)[k]
        if (item !== null && typeof item === 'object') stack.push([item, i, k])
      }
    }
  }
}
