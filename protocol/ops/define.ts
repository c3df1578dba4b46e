import type { IdPrefix } from '../ids.js'

/**
 * Where an operation runs: on `any` host (its state is guarded by compare-and-set, so every host may serve it), or
 * on the `owner`, the one host that holds the partition of the id it names (single activation).
 */
export type Placement = 'any' | 'owner'

/** A validator of one input (an arktype type): the validated value, or arktype's errors. */
export interface Schema<T> {
  (input: unknown): unknown
  readonly infer: T
}

declare const replyOf: unique symbol
/** The type an operation answers with; nothing at run time. */
export interface Reply<R> {
  readonly [replyOf]?: R
}
/** Declares an operation's reply type: `reply: returns<Agent>()`. */
export const returns = <R>(): Reply<R> => ({})

/** One operation as a kind declares it. */
export interface OpSpec<B, Q, R> {
  placement: Placement
  /** The request body's schema; an operation without one takes no body. */
  body?: Schema<B>
  /** The query's schema; an operation without one takes no query. */
  query?: Schema<Q>
  /**
   * Creates of an owner-placed kind: the caller mints the new id (from the Idempotency-Key when there is one), so
   * the create lands on the host that will own it.
   */
  mint?: true
  /**
   * A second path id, naming one thing inside the actor the first names (a session's resource, `resource_id`): the
   * router checks its prefix as it checks the first (a wrong one is a 404 before anyone is asked), and the handler
   * gets it as `sub`. The request still goes to the actor of the first id.
   */
  sub?: IdSpec
  reply: Reply<R>
}

/** The id that names one actor of a kind: the path parameter that carries it and its prefix. */
export interface IdSpec {
  param: string
  /** What a 404 calls the resource: `Agent agent_x not found`. */
  noun: string
  /** One of ours (IdPrefix) for the API's kinds; any prefix for a kind of one's own (a test kind). */
  prefix: IdPrefix | (string & {})
  /**
   * The shape check for an id that is not `<prefix>_…` (a skill version's number); only for a `sub`, which never
   * reaches a subject or key. Default: protocol/ids.ts#isId with `prefix`.
   */
  check?: (value: string) => boolean
}

/** One operation of a kind, as callers and the dispatcher see it. */
export interface Op<B = unknown, Q = unknown, R = unknown> extends OpSpec<B, Q, R> {
  readonly kind: string
  readonly name: string
  readonly id: IdSpec
}

// biome-ignore lint/suspicious/noExplicitAny: a table of specs of any shapes; each entry keeps its own types.
type AnySpecs = Record<string, OpSpec<any, any, any>>

export type OpsOf<S extends AnySpecs> = {
  readonly [K in keyof S & string]: S[K] extends OpSpec<infer B, infer Q, infer R> ? Op<B, Q, R> : never
}

/** A kind's contract: its name, its id, and its operation table. */
export interface KindContract<S extends AnySpecs = AnySpecs> {
  readonly kind: string
  readonly id: IdSpec
  readonly ops: OpsOf<S>
}

/** The body, query and reply types of an operation. */
export type BodyOf<O> = O extends Op<infer B, unknown, unknown> ? B : never
export type QueryOf<O> = O extends Op<unknown, infer Q, unknown> ? Q : never
export type ReplyOf<O> = O extends Op<unknown, unknown, infer R> ? R : never

/**
 * Declares a kind's operation table. Names of operations placed on `any` host are one subject token (no dots):
 * they are served on `troupe.<kind>.<op>` by a queue group.
 */
export function defineKind<S extends AnySpecs>(kind: string, id: IdSpec, specs: S): KindContract<S> {
  const ops: Record<string, Op> = {}
  for (const [name, spec] of Object.entries(specs)) {
    if (spec.placement === 'any' && name.includes('.')) throw new Error(`${kind}.${name}: an op placed on any host is one subject token`)
    ops[name] = Object.freeze({ ...spec, kind, name, id })
  }
  return Object.freeze({ kind, id, ops: Object.freeze(ops) as OpsOf<S> })
}
