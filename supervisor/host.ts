import type { NatsConnection, Msg, Subscription } from '@nats-io/transport-node'
import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { Kvm } from '@nats-io/kv'
import type { Logger } from 'pino'
import { decode, encode } from '../protocol/codec.js'
import type { ActorReply, ActorRequest } from '../protocol/envelope.js'
import { isApiError, internal } from '../protocol/errors.js'
import { newId } from '../protocol/ids.js'
import { Buckets, HOST_PING, actorQueue, actorSubject, partitionWildcard, partitionToken } from '../protocol/subjects.js'
import { askActor } from '../protocol/transport.js'
import { ACTOR_KINDS } from '../actors/index.js'
import type { HostContext, HostSettings, KindRuntime, PartitionedRuntime } from '../actors/kit/types.js'
import { LEASE_TTL_MS, PartitionLeases } from './partitions.js'
import { retryWhileStarting } from '../actors/kit/retry.js'

export interface ActorHost {
  id: string
  stop(): Promise<void>
}

const HOST_HEARTBEAT_MS = 600

/**
 * Runs every actor kind on one NATS connection: shared kinds on queue groups, partitioned kinds on the
 * partitions this host leases. Replies are always envelopes; an unexpected throw is logged and becomes a
 * 500 that reveals nothing.
 */
export async function startActorHost(nc: NatsConnection, log: Logger, settings: HostSettings): Promise<ActorHost> {
  const hostId = newId('host')
  log = log.child({ host: hostId })
  const js = jetstream(nc)
  const jsm = await retryWhileStarting('jetstream', () => jetstreamManager(nc))
  const kvm = new Kvm(js)
  const ctx: HostContext = {
    nc, js, jsm, kvm, log, hostId, settings,
    ask: (subject, req, timeoutMs = 10_000) => askActor(nc, subject, { rid: newId('req'), ...req }, timeoutMs),
  }

  const hostsKv = await retryWhileStarting('hosts bucket', () => kvm.create(Buckets.hosts, { ttl: LEASE_TTL_MS, history: 1 }))
  const leasesKv = await retryWhileStarting('leases bucket', () => kvm.create(Buckets.leases, { ttl: LEASE_TTL_MS, history: 1 }))
  const beat = () => hostsKv.put(`host.${hostId}`, encode({ at: Date.now() })).catch(() => 0)
  await beat()
  const heartbeat = setInterval(beat, HOST_HEARTBEAT_MS)
  const liveHosts = new Map<string, number>()
  const hostWatch = await hostsKv.watch({ key: 'host.>' })
  void (async () => {
    for await (const e of hostWatch) {
      if (e.operation === 'PUT') liveHosts.set(e.key, Date.now())
      else liveHosts.delete(e.key)
    }
  })()
  const countLive = () => {
    let n = 0
    for (const at of liveHosts.values()) if (Date.now() - at < LEASE_TTL_MS) n++
    return Math.max(n, 1)
  }

  const subs: Subscription[] = []
  const closers: Array<() => Promise<void>> = []
  const leases: PartitionLeases[] = []

  const reply = (m: Msg, r: ActorReply) => {
    if (m.reply) m.respond(encode(r))
  }
  const run = async (m: Msg, fn: (req: ActorRequest) => Promise<unknown>) => {
    let req: ActorRequest
    try {
      req = decode<ActorRequest>(m.data)
    } catch {
      return reply(m, { ok: false, error: internal('Undecodable actor request').toData() })
    }
    try {
      reply(m, { ok: true, body: await fn(req) })
    } catch (err) {
      if (!isApiError(err)) log.error({ err, rid: req.rid, subject: m.subject }, 'actor failed')
      reply(m, { ok: false, error: (isApiError(err) ? err : internal()).toData() })
    }
  }

  for (const def of ACTOR_KINDS) {
    if (def.placement === 'shared') {
      const rt: KindRuntime = await def.start(ctx)
      closers.push(() => rt.close())
      const sub = nc.subscribe(actorSubject(def.kind, '*'), {
        queue: actorQueue(def.kind),
        callback: (_e, m) => {
          const op = m.subject.slice(m.subject.lastIndexOf('.') + 1)
          void run(m, (req) => {
            const h = rt.ops[op]
            if (!h) throw internal(`No operation ${op} on ${def.kind}`)
            return h(req)
          })
        },
      })
      subs.push(sub)
    } else {
      const rt: PartitionedRuntime = await def.start(ctx)
      closers.push(() => rt.close())
      const partSubs = new Map<number, Subscription>()
      const prefixLen = `troupe.${def.kind}.p00.`.length
      const pl = new PartitionLeases(leasesKv, def.kind, hostId, countLive, {
        gained: async (p) => {
          const sub = nc.subscribe(partitionWildcard(def.kind, p), {
            callback: (_e, m) => {
              const rest = m.subject.slice(prefixLen)
              const dot = rest.indexOf('.')
              void run(m, (req) => rt.handle(rest.slice(0, dot), req))
            },
          })
          partSubs.set(p, sub)
          await rt.acquired(p)
        },
        lost: async (p) => {
          partSubs.get(p)?.unsubscribe()
          partSubs.delete(p)
          await rt.released(p)
        },
      }, log)
      await pl.start()
      leases.push(pl)
      log.info({ kind: def.kind, partitions: pl.ownedPartitions().map(partitionToken) }, 'partitioned kind started')
    }
  }

  subs.push(nc.subscribe(HOST_PING, { callback: (_e, m) => void m.respond(encode({ host: hostId })) }))
  log.info({ kinds: ACTOR_KINDS.map((k) => k.kind) }, 'actor host ready')

  return {
    id: hostId,
    async stop() {
      clearInterval(heartbeat)
      hostWatch.stop()
      for (const s of subs) s.unsubscribe()
      for (const l of leases) await l.stop()
      for (const c of closers) await c().catch((err) => log.warn({ err }, 'actor kind close failed'))
      await hostsKv.delete(`host.${hostId}`).catch(() => undefined)
    },
  }
}
