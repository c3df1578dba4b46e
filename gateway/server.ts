import { ApiError, isApiError } from '../protocol/errors/api-error.js'
import { toEnvelope } from '../protocol/errors/envelope.js'
import { fail } from '../protocol/errors/fail.js'
import { idFromKey, newId } from '../protocol/ids.js'
import { DEFAULT_FILE_MAX_BYTES, type Downloadable, uploadObjectName } from '../protocol/files.js'
import { ROUTES, type Route } from '../protocol/routes/index.js'
import { bodyLimitFor } from '../protocol/wire.js'
import { parse } from '../protocol/validate.js'
import { loadTransport } from './adapters/index.js'
import { bodyOf } from './body.js'
import { CollectWhenQuiet } from './collect-when-quiet.js'
import { idempotencyKeyOf } from './idempotency-key.js'
import { dispatch, dispatchLarge } from './dispatch.js'
import { parseBody } from './parse-body.js'
import { OFF_LOOP_ABOVE, ParsePool } from './parse-pool.js'
import { readiness } from './health.js'
import { send, sendHead, sendJson, type ResponseState } from './http.js'
import { downloadHeaders, sendBytes } from './download.js'
import { MULTIPART_SLACK, receiveUpload } from './upload.js'
import { bytesStream, receiveSkillUpload } from './skill-upload.js'
import { SKILL_UPLOAD_MAX_BYTES } from '../protocol/skill-rules.js'
import { SkillPool } from './skill-pool.js'
import { OPS_ROUTES, openapiYaml } from './openapi.js'
import { parseQuery } from './query.js'
import { Router } from './router.js'
import { createSessionStreams } from './session-stream.js'
import { strictProblem } from './strict.js'
import { callerOf, isRefusal } from './auth.js'
import { RateLimits, rateLimited, sessionsFull } from './rate-limit.js'
import type { CallerKey } from '../protocol/schemas/api-key.js'
import { routeHeaders, sessionsTokenOf } from './sessions-token.js'
import { EndedClaims } from './ended-claims.js'
import type { After, BodyStream, Exchange, TransportName } from './transport.js'
import type { GatewayOptions, IncomingRequest } from './types.js'
import { isRecording, METRICS_CONTENT_TYPE, metricsText } from '../metrics/index.js'
import { countRequest, sseStreamsOpen } from './metrics.js'

export const DEFAULT_BODY_LIMIT = 32 * 1024 * 1024

export interface Gateway {
  port: number
  /** The HTTP server underneath (`TROUPE_HTTP`). */
  readonly transport: TransportName
  /**
   * The largest request body accepted, in bytes: `bodyLimit`, lowered when the NATS server's `max_payload`
   * cannot carry that much (every body travels to its actor as one NATS message).
   */
  readonly bodyLimit: number
  /** Session event streams open right now (SSE tails, including ones still opening). */
  readonly openStreams: number
  /** Sessions this gateway holds a live subscription for (one each, shared by the session's streams). */
  readonly liveSubscriptions: number
  close(): void
}

/** Starts the HTTP surface: every route of the table, plus health, readiness and the OpenAPI inventory. */
export async function startGateway(opts: GatewayOptions): Promise<Gateway> {
  const transport = opts.transport ?? 'uws'
  const listen = await loadTransport(transport)
  const { nc, log } = opts
  const wanted = opts.bodyLimit ?? DEFAULT_BODY_LIMIT
  const maxPayload = nc.info?.max_payload
  const bodyLimit = bodyLimitFor(wanted, maxPayload)
  if (bodyLimit < wanted) {
    log.warn(
      { bodyLimit, maxPayload },
      `request bodies are limited to ${bodyLimit} bytes (not ${wanted}) by the NATS server's max_payload of ${maxPayload} bytes; ` +
        'set max_payload: 64MB in its configuration to accept the documented 32 MiB',
    )
  }
  const actorTimeoutMs = opts.actorTimeoutMs ?? 15_000
  const fileLimit = opts.fileLimit ?? DEFAULT_FILE_MAX_BYTES
  const strict = opts.strict ?? false
  const router = new Router(ROUTES)
  const limits = new RateLimits(() => opts.keys?.hosts() ?? 1)
  const endedClaims = new EndedClaims(nc)
  const ops = isRecording() ? OPS_ROUTES : OPS_ROUTES.filter((r) => r.path !== '/metrics')
  const openapi = openapiYaml([...ROUTES, ...ops], process.env.npm_package_version ?? '0.1.0')
  // Workers start with the first large body, not here: a gateway that never sees one never pays for them.
  const parsePool = new ParsePool({ budgetBytes: opts.parseBudget })
  const skillPool = new SkillPool()
  const afterLargeBodies = new CollectWhenQuiet({
    onCollected: (bytes, ms) => log.info({ bytes, ms: Math.round(ms) }, 'collected the garbage of large bodies'),
  })
  const streams = createSessionStreams({
    nc,
    actors: opts.actors,
    log,
    actorTimeoutMs,
    keepaliveMs: opts.sseKeepaliveMs,
  })

  const answerError = (ex: Exchange, state: ResponseState, rid: string, err: unknown, after: After = 'keep', extra?: Record<string, string>) => {
    if (!isApiError(err)) log.error({ err, rid }, 'unhandled error')
    const env = toEnvelope(err, rid)
    sendJson(ex, state, env.status, rid, env.body, { ...env.headers, ...extra }, after)
  }
  const notAllowed = (ex: Exchange, state: ResponseState, inc: IncomingRequest, methods: string[]) => {
    const allowed = withHead(methods)
    answerError(ex, state, inc.rid, fail('method_not_allowed', inc.method, inc.path, allowed), 'keep', { allow: allowed.join(', ') })
  }

  /**
   * Nothing may be awaited before the body is read or dropped: uWS loses body chunks that arrive while no reader is
   * registered (gateway/transport.ts#Exchange.readBody).
   */
  async function handle(ex: Exchange, state: ResponseState, inc: IncomingRequest): Promise<void> {
    const { rid } = inc
    // HEAD is answered as GET would be, without the body (gateway/http.ts#send).
    const method = inc.method === 'HEAD' ? 'GET' : inc.method
    if (OPS_PATHS.has(inc.path)) {
      if (method !== 'GET') return notAllowed(ex, state, inc, ['GET'])
      inc.route = inc.path
      if (inc.path === '/healthz') return sendJson(ex, state, 200, rid, { status: 'ok' })
      if (inc.path === '/readyz') {
        const r = await readiness(nc)
        return sendJson(ex, state, r.ready ? 200 : 503, rid, {
          status: r.ready ? 'ready' : 'unavailable',
          checks: r.checks,
          ...(r.waiting ? { waiting: r.waiting } : {}),
        })
      }
      if (inc.path === '/metrics') {
        // TROUPE_METRICS=off: nothing is recorded, so there is nothing to serve.
        if (!isRecording()) throw fail('route_not_found', inc.method, inc.path)
        return send(ex, state, 200, { 'content-type': METRICS_CONTENT_TYPE, 'request-id': rid }, await metricsText())
      }
      return send(ex, state, 200, { 'content-type': 'application/yaml', 'request-id': rid }, openapi)
    }
    const match = router.match(method, inc.path)
    if (!match) {
      const allowed = router.methodsFor(inc.path)
      if (!allowed.length) throw fail('route_not_found', inc.method, inc.path)
      return notAllowed(ex, state, inc, allowed)
    }
    const { route, params } = match
    inc.route = route.path

    const { mayHaveBody, declared, problem: badLength } = bodyOf(inc.method, inc.headers)
    // Whatever body the transport framed is dropped as it comes.
    if (badLength) return answerError(ex, state, rid, badLength, ex.dropBody())
    if (strict) {
      const problem = strictProblem(inc.headers, route.beta ?? 'managed-agents', mayHaveBody && !!route.op.body && route.bytes === undefined)
      // The body may still be streaming in: answer now, drop it as it comes.
      if (problem) return answerError(ex, state, rid, problem, mayHaveBody ? ex.dropBody() : 'keep')
    }

    const token = sessionsTokenOf(route, params, inc.headers, opts.actors.tokenKey, (c) => endedClaims.has(c))
    if (token instanceof ApiError) return answerError(ex, state, rid, token, mayHaveBody ? ex.dropBody() : 'keep')
    // A sessions token is the worker's credential on the routes it reaches; anything else presents an API key.
    let caller: CallerKey | undefined
    if (token === undefined) {
      const now = Date.now()
      const who = callerOf(opts.keys, route, method, inc.headers, now)
      if (isRefusal(who)) return answerError(ex, state, rid, who, mayHaveBody ? ex.dropBody() : 'keep')
      if (who) {
        inc.key = who.id
        const wait = limits.request(who, now)
        if (wait > 0)
          return answerError(ex, state, rid, rateLimited('requests per second', who.limits.requests_per_second, wait), mayHaveBody ? ex.dropBody() : 'keep')
        const busy = route.operationId === 'sessions.events.send' && sessionsFull(opts.keys!, who, params.session_id!)
        if (busy) return answerError(ex, state, rid, busy, mayHaveBody ? ex.dropBody() : 'keep')
        caller = who
      }
    }

    if (caller && declared !== undefined && (route.bytes === 'upload' || route.bytes === 'skill')) {
      const wait = limits.upload(caller, declared, Date.now())
      if (wait > 0) return answerError(ex, state, rid, rateLimited('upload bytes per minute', caller.limits.upload_bytes_per_minute, wait), ex.dropBody())
    }
    if (route.bytes === 'upload') {
      if (!mayHaveBody) return answerError(ex, state, rid, fail('upload_file_missing'))
      if (declared !== undefined && declared > fileLimit + MULTIPART_SLACK) return answerError(ex, state, rid, fail('file_too_large', fileLimit), ex.dropBody())
      return upload(ex, state, inc, route, ex.streamBody())
    }
    if (route.bytes === 'download') return download(ex, state, inc, route, params)
    if (route.bytes === 'skill') {
      if (!mayHaveBody) return answerError(ex, state, rid, fail('skill_bundle_missing'))
      if (declared !== undefined && declared > SKILL_UPLOAD_MAX_BYTES + MULTIPART_SLACK) {
        return answerError(ex, state, rid, fail('skill_bundle_too_large', SKILL_UPLOAD_MAX_BYTES), ex.dropBody())
      }
      return skillUpload(ex, state, inc, route, params, ex.streamBody())
    }

    let bytes: Buffer | undefined
    if (mayHaveBody) {
      const read = await ex.readBody(bodyLimit, declared)
      if (!read.ok) return read.reason === 'aborted' ? undefined : answerError(ex, state, rid, fail('body_too_large', bodyLimit), read.unread)
      inc.bytesIn = read.bytes.length
      bytes = read.bytes
      if (bytes.length >= OFF_LOOP_ABOVE) afterLargeBodies.note(bytes.length)
    }
    // Bodies from OFF_LOOP_ABOVE up are validated by the pool, which hands back the encoded actor request.
    const large = bytes !== undefined && bytes.length >= OFF_LOOP_ABOVE && route.op.body !== undefined
    const body = large ? undefined : parseBody(route, bytes)
    const query = route.op.query ? parse(route.op.query, parseQuery(inc.query)) : {}
    if (route.stream) return streams.serve(ex, state, { route, params, query, rid, headers: inc.headers })
    const key = idempotencyKeyOf(route, inc.headers)
    const headers = routeHeaders(route, inc.headers)
    const req = {
      op: route.op.name,
      rid,
      params,
      query,
      ...(key === undefined ? {} : { key }),
      ...(headers === undefined ? {} : { headers }),
      ...(token === undefined ? {} : { token }),
      ...(caller === undefined ? {} : { caller: caller.caller }),
    }
    const result = large
      ? await dispatchLarge(opts.actors.wire, parsePool, route, req, bytes!, actorTimeoutMs)
      : await dispatch(opts.actors.wire, route, { ...req, body }, actorTimeoutMs)
    sendJson(ex, state, 200, rid, result)
  }

  /** An upload: the bytes into the store as they arrive, then the file's record (gateway/upload.ts). */
  async function upload(ex: Exchange, state: ResponseState, inc: IncomingRequest, route: Route, body: BodyStream): Promise<void> {
    const { rid } = inc
    state.onAbort = () => body.readable.destroy(new Error('the client went away before the body ended'))
    const key = idempotencyKeyOf(route, inc.headers)
    // From the Idempotency-Key when there is one: a retry finds the record. The object is this attempt's own, so no
    // other upload with the key can overwrite the bytes a record names; `create` decides which attempt's is kept.
    const id = key ? idFromKey('file', route.operationId, key) : newId('file')
    const object = uploadObjectName(id)
    const got = await receiveUpload(body.readable, inc.headers, object, opts.actors.files, fileLimit)
    if (!got.ok) return answerError(ex, state, rid, got.error, body.drop())
    inc.bytesIn = got.file.size_bytes
    // Bytes whose record is never written (this call fails) are swept as orphans (actors/file/sweep.ts).
    const req = { op: route.op.name, rid, params: {}, query: {}, body: { id, object, ...got.file }, ...(key === undefined ? {} : { key }) }
    sendJson(ex, state, 200, rid, await dispatch(opts.actors.wire, route, req, actorTimeoutMs))
  }

  /**
   * A skill bundle (gateway/skill-upload.ts): read whole (bounded), validated and made canonical on the skill pool's
   * threads, its canonical zip stored as this attempt's own object, then the skill or version recorded. Bytes whose
   * version is never recorded are given back here, or swept (actors/skill).
   */
  async function skillUpload(ex: Exchange, state: ResponseState, inc: IncomingRequest, route: Route, params: Record<string, string>, body: BodyStream) {
    const { rid } = inc
    state.onAbort = () => body.readable.destroy(new Error('the client went away before the body ended'))
    const got = await receiveSkillUpload(body.readable, inc.headers)
    if (!got.ok) return answerError(ex, state, rid, got.error, body.drop())
    const bundle = await skillPool.validate(got.upload.input)
    if (!bundle.ok) return answerError(ex, state, rid, fail('skill_bundle_invalid', bundle.message))
    const key = idempotencyKeyOf(route, inc.headers)
    const creating = route.op.name === 'create'
    const id = creating ? (key ? idFromKey('skill', route.operationId, key) : newId('skill')) : params.skill_id!
    const object = uploadObjectName(id)
    const stored = await opts.actors.skills.put(object, bytesStream(bundle.zip)).catch(() => {
      throw fail('store_unavailable')
    })
    inc.bytesIn = stored.size
    const record = {
      object,
      name: bundle.name,
      description: bundle.description,
      files: bundle.files,
      expanded_bytes: bundle.expandedBytes,
      size_bytes: stored.size,
      digest: stored.digest,
      ...(creating ? { id, ...(got.upload.title === undefined ? {} : { display_title: got.upload.title }) } : {}),
    }
    const req = { op: route.op.name, rid, params, query: {}, body: record, ...(key === undefined ? {} : { key }) }
    const answer = await dispatch(opts.actors.wire, route, req, actorTimeoutMs).catch(async (err) => {
      // Refused before its owner looked (no such skill, a bad title): the bytes are this attempt's alone.
      if (err instanceof ApiError && err.status < 500) await opts.actors.skills.discard(object).catch(() => undefined)
      throw err
    })
    sendJson(ex, state, 200, rid, answer)
  }

  /** What a download's op answers: the bytes' metadata, the object holding them, and the store (default files). */
  type DownloadReply = { file: Downloadable; object: string; store?: 'skills' }

  /** A download: the file's record (404 when there is none), then the bytes of the object it names (gateway/download.ts). */
  async function download(ex: Exchange, state: ResponseState, inc: IncomingRequest, route: Route, params: Record<string, string>): Promise<void> {
    const { rid } = inc
    const req = { op: route.op.name, rid, params, query: {}, body: undefined }
    const { file, object, store } = (await dispatch(opts.actors.wire, route, req, actorTimeoutMs)) as DownloadReply
    if (ex.method === 'HEAD') return sendHead(ex, state, 200, downloadHeaders(file, rid), file.size_bytes)
    const chunks = await (store === 'skills' ? opts.actors.skills : opts.actors.files).read(object)
    if (!chunks) throw fail('file_not_found', file.id)
    // Cut short (the file deleted midway, the store gone): the client saw a closed connection; not a bug of ours.
    await sendBytes(ex, state, file, rid, chunks).catch((err) =>
      log.warn({ rid, err: String(err.message), cause: String(err.cause?.message ?? err.cause) }, 'download cut short'),
    )
  }

  /** One line per request, once its response is complete (an SSE stream: once it ends). */
  const logRequest = (inc: IncomingRequest, state: ResponseState, t0: number) => {
    const ms = performance.now() - t0
    // 499: the client went away before any answer (nginx's convention).
    const status = state.status ?? 499
    countRequest(inc.method, inc.route, status, ms / 1000)
    log.info(
      {
        rid: inc.rid,
        method: inc.method,
        route: inc.route,
        status,
        ms: Math.round(ms * 10) / 10,
        bytes_in: inc.bytesIn,
        bytes_out: state.bytesOut ?? 0,
        ...(inc.key === undefined ? {} : { key: inc.key }),
      },
      'request',
    )
  }

  const onRequest = (ex: Exchange) => {
    const t0 = performance.now()
    const state: ResponseState = { aborted: false, done: false }
    ex.onAbort(() => {
      state.aborted = true
      state.onAbort?.()
    })
    const inc: IncomingRequest = {
      method: ex.method,
      path: ex.path,
      query: ex.query,
      headers: ex.headers,
      rid: newId('req'),
      route: 'unmatched',
      bytesIn: 0,
    }
    handle(ex, state, inc)
      .catch((err) => {
        if (!isApiError(err)) log.error({ err, rid: inc.rid, path: inc.path }, 'request failed')
        // A body we did not finish reading leaves the connection in an unknown state: close it.
        answerError(ex, state, inc.rid, err, err instanceof ApiError ? 'keep' : 'close')
      })
      .finally(() => {
        if (state.streaming) void state.streaming.then(() => logRequest(inc, state, t0))
        else logRequest(inc, state, t0)
      })
  }

  const listening = await listen({ host: opts.host ?? '127.0.0.1', port: opts.port ?? 8080, handler: onRequest })
  const untrackStreams = sseStreamsOpen.track(() => streams.size)
  let closed = false
  return {
    port: listening.port,
    transport,
    bodyLimit,
    get openStreams() {
      return streams.size
    },
    get liveSubscriptions() {
      return streams.liveSubscriptions
    },
    close: () => {
      if (closed) return
      closed = true
      untrackStreams()
      streams.closeAll()
      listening.close()
      afterLargeBodies.close()
      void parsePool.close()
      void skillPool.close()
    },
  }
}

const OPS_PATHS = new Set(OPS_ROUTES.map((r) => r.path))

/** 405's `Allow`: HEAD wherever GET is, since HEAD is answered as GET. */
const withHead = (methods: readonly string[]) => (methods.includes('GET') && !methods.includes('HEAD') ? [...methods, 'HEAD'] : [...methods])

export type { Route }
