import { headers, type Msg, type NatsConnection } from '@nats-io/transport-node'
import { RequestError, TimeoutError } from '@nats-io/nats-core'
import { decode, encode } from '../../protocol/codec.js'
import { ApiError } from '../../protocol/errors/api-error.js'
import { fail } from '../../protocol/errors/fail.js'
import type { ActorReply, ActorRequest } from '../../protocol/envelope.js'
import { REQUEST_ID_HEADER, type ActorWire } from '../../protocol/wire.js'

/** Room for the request's NATS headers (`NATS/1.0`, the request id) beside its payload. */
const HEADER_ALLOWANCE = 256
/** Requests above this size give timers a turn before they are sent. */
const YIELD_ABOVE = 1024 * 1024
/**
 * How long a request with nobody subscribed is retried before it answers 503. A hand-over leaves a partition
 * unsubscribed for the few milliseconds between the old owner naming the new one and the new owner's watch
 * seeing it; "no responders" means the request was certainly not delivered, so sending it again is safe. A
 * crashed owner's partitions take longer, about 1.5 s (its connection must be seen gone, supervisor/placement.ts):
 * a request waits that out here, answered as soon as the new owner subscribes; past this it answers 503 with a
 * short retry hint, and a client with the official client's default two retries still outlasts a slower failover.
 */
const NO_RESPONDERS_RETRY_MS = 2000
/** The longest pause between two sends of a request nobody was subscribed to. */
const NO_RESPONDERS_STEP_MS = 100

/**
 * What the wire learns from, and tells, the host's placement, so a request to a partition whose owner failed is not
 * left to its timeout (the supervisor implements it over its placement records; without it, requests wait).
 */
export interface Failovers {
  /** Nobody was subscribed to `subject`: the partition's holder may be gone, worth a look at once. */
  unanswered(subject: string): void
  /**
   * Calls `then` once when the partition `subject` is placed on changes holder (a takeover, or a hand-over); gives
   * what stops listening, or undefined for a subject that names no partition.
   */
  moved(subject: string, then: () => void): (() => void) | undefined
}

/** The actor wire on one NATS connection (what the supervisor hands the gateway). */
export const actorWire = (nc: NatsConnection, failovers?: Failovers): ActorWire => ({
  ask: (subject, req, timeoutMs, uncertainOnTimeout) => askActorEncoded(nc, subject, encode(req), req.rid, timeoutMs, uncertainOnTimeout, failovers),
  askEncoded: (subject, data, rid, timeoutMs, uncertainOnTimeout) => askActorEncoded(nc, subject, data, rid, timeoutMs, uncertainOnTimeout, failovers),
})

/**
 * One actor request/reply on the wire: msgpack both ways, the request id both inside the request and in the
 * `Troupe-Request-Id` header. Used by the gateway and by actors asking each other, so both see the same failure
 * semantics: nobody subscribed (a partition in failover) or no answer in time becomes a retryable 503; a request
 * too big for the server's `max_payload` (msgpack can outgrow the JSON it came from) is a 413, not a 500.
 */
export async function askActor<T = unknown>(nc: NatsConnection, subject: string, req: ActorRequest, timeoutMs: number, uncertainOnTimeout = false): Promise<T> {
  return askActorEncoded<T>(nc, subject, encode(req), req.rid, timeoutMs, uncertainOnTimeout)
}

const MOVED = Symbol('moved')

/** askActor for a request already encoded (a large body, encoded off the event loop). */
export async function askActorEncoded<T = unknown>(
  nc: NatsConnection,
  subject: string,
  data: Uint8Array,
  rid: string,
  timeoutMs: number,
  /**
   * The request stores something new and carries no Idempotency-Key: an answer that did not come in time, or an
   * actor's write that got none (`outcomeUnknown`), leaves its outcome unknown, a 504 the client must not retry
   * (default false: a retryable 503).
   */
  uncertainOnTimeout = false,
  failovers?: Failovers,
): Promise<T> {
  checkFitsPayload(nc, data)
  const h = headers()
  h.set(REQUEST_ID_HEADER, rid)
  // Reading and encoding a big request held the event loop: let due timers send first (a heartbeat sent after
  // megabytes on the same connection is acknowledged only after them, and may lapse meanwhile).
  if (data.length > YIELD_ABOVE) await new Promise((r) => setTimeout(r, 0))
  let reply: ActorReply | undefined
  const start = Date.now()
  let giveUpAt = start + Math.min(NO_RESPONDERS_RETRY_MS, timeoutMs)
  for (let wait = 10; reply === undefined; wait = Math.min(wait * 2, NO_RESPONDERS_STEP_MS)) {
    try {
      const msg = await sent(nc.request(subject, data, { timeout: Math.max(1, start + timeoutMs - Date.now()), headers: h }))
      if (msg === MOVED) {
        // The new holder may not have subscribed yet: it gets the same wait as a failover found at the first send.
        giveUpAt = Math.min(Date.now() + NO_RESPONDERS_RETRY_MS, start + timeoutMs)
        continue
      }
      reply = decode<ActorReply>(msg.data)
      // Not served by a host that was handing the partition over: as certain as "no responders", and as safe to send
      // again, to the next owner.
      if (!reply.ok && reply.error.reason === 'handed_over' && Date.now() + wait <= giveUpAt) {
        reply = undefined
        await new Promise((r) => setTimeout(r, wait))
      }
    } catch (err) {
      if (!(err instanceof RequestError && err.isNoResponders())) throw classify(err, uncertainOnTimeout)
      failovers?.unanswered(subject)
      if (Date.now() + wait > giveUpAt) throw fail('failing_over')
      await new Promise((r) => setTimeout(r, wait))
    }
  }
  return settle<T>(reply, uncertainOnTimeout)

  /**
   * The request's answer, or MOVED when its partition changed holder first and the request is safe to send again:
   * the holder it went to was taken over (dead, or stopped and fenced: it answers nothing it had not answered), so
   * its answer may never come, and the new holder answers at once. A request whose repeat could store something
   * twice waits for its own answer (or its timeout) instead.
   */
  function sent(request: Promise<Msg>): Promise<Msg | typeof MOVED> {
    if (uncertainOnTimeout || !failovers) return request
    let off: (() => void) | undefined
    const moved = new Promise<typeof MOVED>((resolve) => {
      off = failovers.moved(subject, () => resolve(MOVED))
    })
    if (!off) return request
    // The losing request still settles (its timeout, or a late answer): nobody waits for it.
    request.catch(() => undefined)
    return Promise.race([request, moved]).finally(off)
  }
}

/** A request encoded larger than the server's `max_payload` is a 413 (msgpack can outgrow the JSON it came from). */
function checkFitsPayload(nc: NatsConnection, data: Uint8Array): void {
  const maxPayload = nc.info?.max_payload
  if (maxPayload !== undefined && data.length + HEADER_ALLOWANCE > maxPayload) throw fail('encoded_too_large', data.length, maxPayload)
}

/** An actor's reply as its caller sees it: the body, or the actor's error thrown. */
function settle<T>(reply: ActorReply, uncertainOnTimeout: boolean): T {
  if (!reply.ok) {
    if (uncertainOnTimeout && reply.error.outcomeUnknown) throw fail('outcome_uncertain', 'A write of this request got no answer: the request')
    throw new ApiError(reply.error)
  }
  return reply.body as T
}

function classify(err: unknown, uncertainOnTimeout: boolean): unknown {
  if (err instanceof TimeoutError || (err instanceof RequestError && err.cause instanceof TimeoutError)) return timedOut(uncertainOnTimeout)
  return err
}

const timedOut = (uncertainOnTimeout: boolean) =>
  uncertainOnTimeout ? fail('outcome_uncertain', 'The owner of this resource did not answer in time: the request') : fail('owner_timeout')

/**
 * Whether a subject is served in this process: its kind runs here, and for an op placed on an owner, this host serves
 * the id's partition right now. Gives the runner of requests to it, or undefined: the request then goes over NATS.
 */
export type LocalActors = (subject: string) => ((req: ActorRequest) => Promise<ActorReply>) | undefined

/**
 * The actor wire with local calls (Orleans's local call): a request whose subject this host serves runs in-process,
 * through the same dispatcher and the same placement check as over NATS, with no round trip and no msgpack; the
 * rest goes over `remote`. The caller sees the same answers, errors, limits and timeouts either way.
 */
export const localFirst = (nc: NatsConnection, remote: ActorWire, local: LocalActors): ActorWire => ({
  ask<T>(subject: string, req: ActorRequest, timeoutMs: number, uncertainOnTimeout = false): Promise<T> {
    const run = local(subject)
    if (!run) return remote.ask<T>(subject, req, timeoutMs, uncertainOnTimeout)
    return within(run(req), timeoutMs, uncertainOnTimeout).then((r) => settle<T>(r, uncertainOnTimeout))
  },
  async askEncoded<T>(subject: string, data: Uint8Array, rid: string, timeoutMs: number, uncertainOnTimeout = false): Promise<T> {
    const run = local(subject)
    if (!run) return remote.askEncoded<T>(subject, data, rid, timeoutMs, uncertainOnTimeout)
    // The same limit as over NATS, so a body's fate does not depend on which host owns it.
    checkFitsPayload(nc, data)
    // Decoded here, as the actor would have on receipt.
    return settle<T>(await within(run(decode<ActorRequest>(data)), timeoutMs, uncertainOnTimeout), uncertainOnTimeout)
  },
})

/** A local answer bounded like a remote one: past `timeoutMs` the caller gets what a NATS timeout gives. */
function within(reply: Promise<ActorReply>, timeoutMs: number, uncertainOnTimeout: boolean): Promise<ActorReply> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timedOut(uncertainOnTimeout)), timeoutMs)
  })
  return Promise.race([reply, late]).finally(() => clearTimeout(timer))
}
