import { move } from 'piscina'
import { encode } from '../protocol/codec.js'
import type { ActorRequest } from '../protocol/envelope.js'
import { isApiError, type ErrorData } from '../protocol/errors/api-error.js'
import { ROUTES } from '../protocol/routes/index.js'
import { parseBody } from './parse-body.js'

export interface ParseTask {
  operationId: string
  bytes: Uint8Array
  /** The actor request but its body, which this task fills in. */
  request: Omit<ActorRequest, 'body'>
}

/** The encoded actor request (moved, not copied, to the caller), or the 400 the body earned. */
export type ParseResult = Uint8Array | { error: ErrorData }

const byOperation = new Map(ROUTES.map((r) => [r.operationId, r]))

/**
 * The parse pool's task: validate a large body and encode the whole actor request, so the gateway's thread
 * never holds the parsed value at all; it forwards bytes. Errors that are not the client's (a bug) are
 * thrown and become a 500 on the gateway's side, like anywhere else.
 */
export default function parseTask(task: ParseTask): ParseResult {
  const route = byOperation.get(task.operationId)
  if (!route) throw new Error(`parse pool: unknown operation ${task.operationId}`)
  let body: unknown
  try {
    body = parseBody(route, task.bytes)
  } catch (err) {
    if (isApiError(err)) return { error: err.toData() }
    throw err
  }
  // msgpackr may return a view of its reusable buffer: copy into memory of our own before moving it.
  const data = new Uint8Array(encode({ ...task.request, body } satisfies ActorRequest))
  return move(data) as Uint8Array
}
