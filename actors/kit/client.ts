import type { ActorRequest } from '../../protocol/envelope.js'
import { newId } from '../../protocol/ids.js'
import type { BodyOf, Op, QueryOf, ReplyOf } from '../../protocol/ops/define.js'
import { opSubject } from '../../protocol/subjects.js'
import type { ActorWire } from '../../protocol/wire.js'
import { dispatch, type OpTable } from './ops.js'

/** The input of a call: the id it names (ops placed on an owner need one), its body and query. */
export interface CallInput<O> {
  id?: string
  /** The op's second path id (ops that declare `sub`). */
  sub?: string
  body?: BodyOf<O>
  query?: QueryOf<O>
  /** The request this call serves, for logs; a fresh one when absent. */
  rid?: string
  /** An Idempotency-Key (ops of routes marked `once`): a retry with the same key stores nothing twice. */
  key?: string
}

/** Actors asking each other: typed by the callee's op table, addressed by it, never by a hand-spelled subject. */
export interface ActorClient {
  call<O extends Op>(op: O, input: CallInput<O>): Promise<ReplyOf<O>>
}

export interface ActorClientOptions {
  wire: ActorWire
  /** The op table of a kind running in this process, if it does: ops placed on any host are then served here. */
  local(kind: string): OpTable | undefined
  /** How long a remote call may take before it fails with a 503. Default 10 000 ms. */
  timeoutMs?: number
}

/**
 * A client for every kind. An op placed on any host is served in this process when its kind runs here (every host
 * runs every kind): the same handler as over NATS, one round trip fewer. Anything else goes over the actor wire
 * to the op's subject (the owner of the id's partition).
 */
export function actorClient(o: ActorClientOptions): ActorClient {
  const timeoutMs = o.timeoutMs ?? 10_000
  return {
    call<O extends Op>(op: O, input: CallInput<O>) {
      const req: ActorRequest = {
        op: op.name,
        rid: input.rid ?? newId('req'),
        params: {
          ...(input.id === undefined ? {} : { [op.id.param]: input.id }),
          ...(input.sub === undefined || !op.sub ? {} : { [op.sub.param]: input.sub }),
        },
        query: input.query ?? {},
        body: input.body,
        ...(input.key === undefined ? {} : { key: input.key }),
      }
      const table = op.placement === 'any' ? o.local(op.kind) : undefined
      if (table) return dispatch(table, req, { placement: 'any' }) as Promise<ReplyOf<O>>
      return o.wire.ask<ReplyOf<O>>(opSubject(op, input.id), req, timeoutMs)
    },
  }
}
