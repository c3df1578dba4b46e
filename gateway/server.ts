import uWS from 'uWebSockets.js'
import { jetstream } from '@nats-io/jetstream'
import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from 'uWebSockets.js'
import { ApiError, invalidRequest, isApiError, routeNotFound, toEnvelope, tooLarge } from '../protocol/errors.js'
import { newId } from '../protocol/ids.js'
import { ROUTES, type Route } from '../protocol/routes/index.js'
import { parse } from '../protocol/validate.js'
import { readBody } from './body.js'
import { dispatch } from './dispatch.js'
import { readiness } from './health.js'
import { send, sendJson, type ResponseState } from './http.js'
import { OPS_ROUTES, openapiYaml } from './openapi.js'
import { parseQuery } from './query.js'
import { Router } from './router.js'
import { createSessionStreams } from './session-stream.js'
import { strictProblem } from './strict.js'
import type { GatewayOptions, IncomingRequest } from './types.js'
import { assertNativeUws } from './uws.js'

export const DEFAULT_BODY_LIMIT = 32 * 1024 * 1024

export interface Gateway {
  port: number
  /** Session event streams open right now (SSE tails, including ones still opening). */
  readonly openStreams: number
  /** Sessions this gateway holds a live subscription for (one each, shared by the session's streams). */
  readonly liveSubscriptions: number
  close(): void
}

/** Starts the HTTP surface: every route of the table, plus health, readiness and the OpenAPI inventory. */
export async function startGateway(opts: GatewayOptions): Promise<Gateway> {
  assertNativeUws()
  const { nc, log } = opts
  const bodyLimit = opts.bodyLimit ?? DEFAULT_BODY_LIMIT
  const actorTimeoutMs = opts.actorTimeoutMs ?? 15_000
  const strict = opts.strict ?? false
  const router = new Router(ROUTES)
  const openapi = openapiYaml([...ROUTES, ...OPS_ROUTES], process.env.npm_package_version ?? '0.1.0')
  const app: TemplatedApp = uWS.App()
  const streams = createSessionStreams({
    nc, js: opts.js ?? jetstream(nc), log, actorTimeoutMs, keepaliveMs: opts.sseKeepaliveMs,
  })

  const fail = (res: HttpResponse, state: ResponseState, rid: string, err: unknown, close = false) => {
    if (!isApiError(err)) log.error({ err, rid }, 'unhandled error')
    const env = toEnvelope(err, rid)
    sendJson(res, state, env.status, rid, env.body, env.headers, close)
  }

  async function handle(res: HttpResponse, state: ResponseState, inc: IncomingRequest): Promise<void> {
    const { rid } = inc
    if (inc.method === 'GET' && inc.path === '/healthz') return sendJson(res, state, 200, rid, { status: 'ok' })
    if (inc.method === 'GET' && inc.path === '/readyz') {
      const r = await readiness(nc)
      return sendJson(res, state, r.ready ? 200 : 503, rid, { status: r.ready ? 'ready' : 'unavailable', checks: r.checks })
    }
    if (inc.method === 'GET' && inc.path === '/openapi.yaml') {
      return send(res, state, 200, { 'content-type': 'application/yaml', 'request-id': rid }, openapi)
    }
    const match = router.match(inc.method, inc.path)
    if (!match) throw routeNotFound(inc.method, inc.path)
    const { route, params } = match

    const declared = inc.headers['content-length'] !== undefined ? Number(inc.headers['content-length']) : undefined
    const mayHaveBody = inc.method !== 'GET' && (declared === undefined ? inc.headers['transfer-encoding'] !== undefined : declared > 0)
    if (strict) {
      const problem = strictProblem(inc.headers, route.beta ?? 'managed-agents', mayHaveBody && !!route.body)
      if (problem) {
        // The body may still be streaming in: drop the connection rather than read what we will not use.
        return fail(res, state, rid, problem, mayHaveBody)
      }
    }

    let body: unknown = undefined
    if (mayHaveBody) {
      const read = await readBody(res, state, bodyLimit, declared)
      if (!read.ok) return read.reason === 'aborted' ? undefined : fail(res, state, rid, tooLarge(bodyLimit), true)
      if (route.body && read.bytes.length > 0) body = parseJson(read.bytes)
    }
    if (route.body) body = parse(route.body, body ?? {})
    const query = route.query ? parse(route.query, parseQuery(inc.query)) : {}
    if (route.stream) return streams.serve(res, state, { route, params, query, rid, headers: inc.headers })
    const result = await dispatch(nc, route, { op: route.target.op, rid, params, query, body }, actorTimeoutMs)
    sendJson(res, state, 200, rid, result)
  }

  app.any('/*', (res: HttpResponse, req: HttpRequest) => {
    const state: ResponseState = { aborted: false, done: false }
    res.onAborted(() => {
      state.aborted = true
      state.onAbort?.()
    })
    // uWS invalidates `req` when this callback returns: copy what we need now.
    const headers: Record<string, string> = {}
    req.forEach((k, v) => {
      headers[k] = v
    })
    const inc: IncomingRequest = {
      method: req.getCaseSensitiveMethod().toUpperCase(),
      path: req.getUrl(),
      query: req.getQuery() ?? '',
      headers,
      rid: newId('req'),
    }
    handle(res, state, inc).catch((err) => {
      if (!isApiError(err)) log.error({ err, rid: inc.rid, path: inc.path }, 'request failed')
      // A body we did not finish reading leaves the connection in an unknown state: close it.
      fail(res, state, inc.rid, err, !(err instanceof ApiError))
    })
  })

  const listenSocket = await new Promise<us_listen_socket>((resolve, reject) => {
    app.listen(opts.host ?? '127.0.0.1', opts.port ?? 8080, (s) => (s ? resolve(s) : reject(new Error(`cannot listen on ${opts.host ?? '127.0.0.1'}:${opts.port ?? 8080}`))))
  })
  const port = uWS.us_socket_local_port(listenSocket)
  return {
    port,
    get openStreams() {
      return streams.size
    },
    get liveSubscriptions() {
      return streams.liveSubscriptions
    },
    close: () => {
      streams.closeAll()
      uWS.us_listen_socket_close(listenSocket)
      app.close?.()
    },
  }
}

function parseJson(bytes: Buffer): unknown {
  try {
    return JSON.parse(bytes.toString('utf8'))
  } catch (e) {
    throw invalidRequest(`Request body is not valid JSON: ${(e as Error).message}`)
  }
}

export type { Route }
