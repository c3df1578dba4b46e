import { ApiError, type ErrorData } from './api-error.js'
import { catalog, type ErrorCode, type ErrorParams } from './catalog.js'

/**
 * The error of a catalog code, its message made from `params` (typed per code): `throw fail('session_archived', id)`.
 * The one way errors are made, so a code always has its status, type, message and wire form.
 */
export function fail<C extends ErrorCode>(code: C, ...params: ErrorParams<C>): ApiError {
  const e = catalog[code]
  const data: ErrorData = {
    status: e.status,
    type: e.type,
    message: (e.message as (...p: unknown[]) => string)(...params),
    reason: code,
  }
  if (e.wire) data.code = code
  if (e.retryAfterMs !== undefined) data.retryAfterMs = e.retryAfterMs
  if (e.details) data.details = (e.details as (...p: unknown[]) => Record<string, unknown>)(...params)
  if (e.fields) data.fields = (e.fields as (...p: unknown[]) => Record<string, unknown>)(...params)
  return new ApiError(data)
}

/**
 * For `.catch`: a 404 about an id the request named in a body field says which field
 * ("environment_id: Environment env_… not found"); with `every4xx`, any refusal of the callee does (an archived memory
 * store, one attached twice). Anything else passes through unchanged. Default: 404s only.
 */
export const inField =
  (field: string, opts: { every4xx?: boolean } = {}) =>
  (err: unknown): never => {
    if (err instanceof ApiError && (err.status === 404 || (opts.every4xx && err.status < 500)))
      throw new ApiError({ ...err.toData(), message: `${field}: ${err.message}` })
    throw err
  }
