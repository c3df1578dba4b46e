import { fail } from '../protocol/errors/fail.js'
import type { Route } from '../protocol/routes/index.js'
import { parse } from '../protocol/validate.js'
import { jsonDepthExceeds, MAX_JSON_DEPTH } from './json-depth.js'
import { checkShape } from './json-shape.js'

/**
 * Turns a request body into the route's validated input: JSON no deeper than MAX_JSON_DEPTH, an object within
 * the shape bounds (json-shape.ts), the route's schema. `bytes` is undefined or empty when the request had no body; a route with a schema then
 * validates `{}`. Pure and synchronous: the gateway runs it inline for small bodies and in its parse pool
 * (gateway/parse-pool.ts) for large ones.
 */
export function parseBody(route: Route, bytes: Uint8Array | undefined): unknown {
  if (!route.op.body) return undefined
  const value = bytes && bytes.length > 0 ? parseObject(bytes) : {}
  return parse(route.op.body, value)
}

const utf8 = new TextDecoder()

/** Every body the table knows is an object: say so rather than let the schema report a missing field. */
function parseObject(bytes: Uint8Array): object {
  // Before parsing: everything after JSON.parse (schemas, msgpack, cloning) recurses over the value.
  if (jsonDepthExceeds(bytes, MAX_JSON_DEPTH)) {
    throw fail('body_too_deep', MAX_JSON_DEPTH)
  }
  let value: unknown
  try {
    value = JSON.parse(utf8.decode(bytes))
  } catch (e) {
    throw fail('invalid_json', (e as Error).message)
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw fail('body_not_object', value === null ? 'null' : Array.isArray(value) ? 'an array' : `a ${typeof value}`)
  }
  checkShape(value)
  return value
}
