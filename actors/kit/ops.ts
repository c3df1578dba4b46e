import type { ActorRequest, Caller } from '../../protocol/envelope.js'
import { fail } from '../../protocol/errors/fail.js'
import type { SessionsTokenClaims } from '../../protocol/sessions-token.js'
import type { BodyOf, KindContract, Op, QueryOf, ReplyOf } from '../../protocol/ops/define.js'

/** What a handler gets: the validated input of its op (the gateway validated it against the op's schemas). */
export interface OpInput<B, Q> {
  /** The id the request names (the kind's path parameter); '' for ops that name none (create, list). */
  id: string
  /** The op's second path id (`OpSpec.sub`, checked by the router like the first); '' for ops that declare none. */
  sub: string
  body: B
  query: Q
  /** The HTTP request id (`req_…`), for logs. */
  rid: string
  /** The client's Idempotency-Key, on routes that store something new. */
  key?: string
  /** The request headers its route reads (`Route.headers`); {} when none. */
  headers: Record<string, string>
  /** The sessions token the request presented (verified and in scope), if any. */
  token?: SessionsTokenClaims
  /** The API key that made the request, when keys are checked. */
  caller?: Caller
}

/** The handler of one op: its typed input to its typed reply. */
export type HandlerOf<O> = (input: OpInput<BodyOf<O>, QueryOf<O>>) => Promise<ReplyOf<O>>

/** A handler for every op of a kind's contract. */
export type Handlers<C extends KindContract> = { [K in keyof C['ops']]: HandlerOf<C['ops'][K]> }

/** A kind's op table as the host serves it: the contract, and a handler per op. */
export interface OpTable<C extends KindContract = KindContract> {
  readonly contract: C
  readonly handlers: Handlers<C>
}

/** Binds a kind's handlers to its contract; the compiler checks every op has one, typed by its schemas. */
export const implement = <C extends KindContract>(contract: C, handlers: Handlers<C>): OpTable<C> => ({ contract, handlers })

/** An untyped handler, for the one dispatcher: the table was type-checked when it was built (`implement`). */
type Erased = (input: OpInput<unknown, unknown>) => Promise<unknown>

/**
 * The one dispatcher: runs the handler of `req.op` on its input. `placed` says how the request arrived: through the
 * kind's queue group (`any`), or on the partition of `id` (`owner`, id from the subject). An op only runs where its
 * contract places it, so nothing placed on an owner runs anywhere else.
 */
export async function dispatch(table: OpTable, req: ActorRequest, placed: { placement: 'any' } | { placement: 'owner'; id: string }): Promise<unknown> {
  const op: Op | undefined = Object.hasOwn(table.contract.ops, req.op) ? table.contract.ops[req.op] : undefined
  if (!op || op.placement !== placed.placement)
    throw fail('operation_not_placed', req.op, table.contract.kind, placed.placement === 'any' ? 'any host' : 'the owner')
  const handler = (table.handlers as Record<string, Erased>)[req.op]!
  const id = placed.placement === 'owner' ? placed.id : (req.params[op.id.param] ?? '')
  const sub = op.sub ? (req.params[op.sub.param] ?? '') : ''
  return handler({
    id,
    sub,
    body: req.body,
    query: req.query,
    rid: req.rid,
    headers: req.headers ?? {},
    ...(req.key === undefined ? {} : { key: req.key }),
    ...(req.token === undefined ? {} : { token: req.token }),
    ...(req.caller === undefined ? {} : { caller: req.caller }),
  })
}
