import type { NatsConnection } from '@nats-io/transport-node'
import { RequestError, TimeoutError } from '@nats-io/nats-core'
import { decode, encode } from './codec.js'
import { ApiError, unavailable } from './errors.js'
import type { ActorReply, ActorRequest } from './envelope.js'

/**
 * One actor request/reply on the wire: msgpack both ways, the request id inside the request for logs. Used by the
 * gateway and by actors asking each other, so both see the same failure semantics: nobody subscribed
 * (a partition in failover) or no answer in time becomes a retryable 503.
 */
export async function askActor<T = unknown>(
  nc: NatsConnection,
  subject: string,
  req: ActorRequest,
  timeoutMs: number,
): Promise<T> {
  let reply: ActorReply
  try {
    const msg = await nc.request(subject, encode(req), { timeout: timeoutMs })
    reply = decode<ActorReply>(msg.data)
  } catch (err) {
    if (err instanceof RequestError && err.isNoResponders()) {
      throw unavailable('The owner of this resource is failing over; retry shortly', 1000)
    }
    if (err instanceof TimeoutError || (err instanceof RequestError && err.cause instanceof TimeoutError)) {
      throw unavailable('The owner of this resource did not answer in time; retry shortly', 1000)
    }
    throw err
  }
  if (!reply.ok) throw new ApiError(reply.error)
  return reply.body as T
}
