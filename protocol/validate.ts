import { type } from 'arktype'
import { fail } from './errors/fail.js'

/**
 * Runs an arktype schema and turns its first problem into a 400 that names the field and the rule,
 * in arktype's words ("name must be non-empty", "tools[0].name must be matched by …").
 */
export function parse<T>(schema: (input: unknown) => T | type.errors, input: unknown, where?: string): T {
  const out = schema(input)
  if (out instanceof type.errors) {
    const first = out[0]!
    let message = first.message
    // arktype says "foo must be removed" for undeclared keys; say why.
    if (first.code === 'predicate' && first.expected === 'removed') message = `${first.propString} is not a known field (it must be removed)`
    if (where) message = `${where}: ${message}`
    if (out.length > 1) message += ` (and ${out.length - 1} more problem${out.length > 2 ? 's' : ''})`
    throw fail('invalid_request', message)
  }
  return out as T
}
