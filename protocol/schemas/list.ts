import { type, type Type } from 'arktype'

/**
 * `item.array()` with its length bounds, built in one step. arktype compiles every type a call returns together with
 * all it references, so `item.array().atLeastLength(1).atMostLength(100)` compiled a large `item` three times over,
 * twice for types no one used, at every process start. The result is the chain's own type (arktype keys nodes by
 * their definition: the same node), so it validates and words its messages as the chain did.
 */
export function listOf<T extends Type<unknown>>(item: T, bounds: { min?: number; max: number }): ReturnType<T['array']> {
  const min = bounds.min === undefined ? {} : { minLength: bounds.min }
  return type.schema({ proto: Array, sequence: item, ...min, maxLength: bounds.max }) as ReturnType<T['array']>
}
