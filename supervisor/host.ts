import os from 'node:os'
import { performance } from 'node:perf_hooks'
import type { NatsConnection, Msg, Subscription } from '@nats-io/transport-node'
import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { Kvm } from '@nats-io/kv'
import type { Logger } from 'pino'
import { decode, encode } from '../protocol/codec.js'
import type { ActorReply, ActorRequest } from '../protocol/envelope.js'
import { isApiError } from '../protocol/errors/api-error.js'
import { fail } from '../protocol/errors/fail.js'
import {
  Buckets,
  HOST_PING,
  SANDBOX_HOST_PREFIX,
  type HostAbilities,
  type HostBeat,
  type SandboxHostBeat,
  actorQueue,
  actorSubject,
  parseActorSubject,
  parsePartitionedSubject,
  partitionWildcard,
} from '../protocol/subjects.js'
import { ACTOR_KINDS } from '../actors/index.js'
import {
  actorClient,
  type ActorKindDef,
  asMoving,
  actorWire,
  dispatch,
  type HostContext,
  type HostSettings,
  isOutcomeUnknown,
  type KindRuntime,
  type LocalActors,
  localFirst,
  openBucket,
  type OpTable,
  retryWhileStarting,
  Roster,
  storeUnavailable,
} from '../actors/kit/index.js'
import type { ActorWire } from '../protocol/wire.js'
import type { LocalTails } from '../protocol/event-item.js'
import { BEAT_EVERY_MS, HOST_TTL_MS, hostsTtl, Placement } from './placement.js'
import { PartitionMoves } from './partition-moves.js'
import { abilitiesOf, keyringConflict, kindsLeft } from './cluster-config.js'
import { natsPresence } from './presence.js'
import { loadTokenKey } from '../actors/work/index.js'

/** How long a request for a partition whose serving is unsettled (heartbeat gap) waits before a 503. */
const SETTLE_MS = 1000
/** How long giving a partition away waits for its subscription to drain before dropping it (ms). */
const DRAIN_MS = 2000

/** Drains `sub`, failing after `ms`. */
function drained(sub: Subscription, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the subscription did not drain within ${ms} ms`)), ms)
  })
  return Promise.race([sub.drain(), late]).finally(() => clearTimeout(timer))
}

export interface ActorHost {
  id: string
  /**
   * The actor wire of this process: a request whose subject this host serves (its kind runs here; for an op placed on
   * an owner, this host serves the id's partition now) runs in-process, the rest goes over NATS.
   */
  wire: ActorWire
  /** The SSE tails the session owners of this process feed in-process (undefined when calls are not served locally). */
  localTails: LocalTails | undefined
  /** The key of sessions tokens (actors/work/token-key.ts), for the gateway's check of them. */
  tokenKey: Uint8Array
  /** What this host can do, as its heartbeat tells the others (which kinds it may own). */
  can: HostAbilities
  /** Live hosts of the cluster, this one included, as its heartbeats say. */
  liveHosts(): number
  /** Sets what the heartbeat says about this process (the gateway's URL once it listens). */
  describe(info: { http_url?: string }): void
  /** Hands every partition over to the remaining hosts, then stops every kind. */
  stop(): Promise<void>
}

export interface ActorHostOptions {
  /** Stable across restarts on one data directory, so a restarted host takes back its partitions at once. */
  hostId: string
  role: string
  /** The kinds this host runs. Default: every kind (actors/index.ts). */
  kinds?: readonly ActorKindDef[]
}

/**
 * Runs every actor kind on one NATS connection: shared kinds on queue groups, partitioned kinds on the
 * partitions placement gives this host. Replies are always envelopes: NATS or JetStream unavailable for a moment
 * is a 503 with a retry hint; any other unexpected throw is logged and becomes a 500 that reveals nothing.
 */
export async function startActorHost(nc: NatsConnection, log: Logger, settings: HostSettings, opts: ActorHostOptions): Promise<ActorHost> {
  const { hostId } = opts
  log = log.child({ host: hostId })
  // How long each step of start-up took, in the ready line: a slow start (a restart under load) says where it went.
  const began = performance.now()
  const took: Record<string, number> = {}
  const lap = (step: string, from: number) => {
    took[step] = Math.round(performance.now() - from)
  }
  const js = jetstream(nc)
  const jsm = await retryWhileStarting('jetstream', () => jetstreamManager(nc), { log })
  const kvm = new Kvm(js)
  const storage = { jsm, replicas: settings.replicas ?? 1, lowerReplicas: settings.replicasExplicit ?? false, log }
  // Kinds start before placement exists, and serve nothing before it does.
  let serving: HostContext['serves'] = () => false
  let whenServing: HostContext['whenServing'] = async () => false
  let holding: HostContext['holding'] = () => undefined
  let othersLive = () => true
  let liveBeats: () => ReadonlyArray<readonly [string, Pick<HostBeat, 'can'>]> = () => []
  const tables = new Map<string, OpTable>()
  let localTails: LocalTails | undefined
  // One after the other, as the kinds' streams below: on a cluster that has just formed, creating two at once can
  // answer "stream not found" for one of them.
  const hostsKv = await openBucket(kvm, storage, Buckets.hosts, { ttl: HOST_TTL_MS })
  // A bucket made by an earlier version keeps its own max age, which every host of the cluster then goes by.
  const ttlMs = await hostsTtl(hostsKv, log)
  const placementKv = await openBucket(kvm, storage, Buckets.placement)
  // Sessions bind their sandboxes to the sandbox hosts this roster hears (actors/workdir/remote-sandbox.ts).
  const sandboxHosts =
    settings.sandboxPlacement === 'remote'
      ? new Roster<SandboxHostBeat>(hostsKv, { prefix: SANDBOX_HOST_PREFIX, beatMs: BEAT_EVERY_MS, ttlMs, log })
      : undefined
  await sandboxHosts?.start()
  // One key signs sessions tokens on every host; the gateway beside this host checks them with it.
  const tokenKey = settings.tokenKey ?? (await loadTokenKey(kvm, storage))
  settings = { ...settings, tokenKey }

  const subs: Subscription[] = []
  const closers: Array<() => Promise<void>> = []
  if (sandboxHosts) closers.push(() => sandboxHosts.stop())
  const partitioned = new Map<string, { rt: KindRuntime; subs: Map<number, { sub: Subscription; state: { handedOver: boolean } }> }>()

  /** Runs one request to its reply envelope: the handler's answer, or its error as the caller must see it. */
  const answer = async (req: ActorRequest, subject: string, fn: (req: ActorRequest) => Promise<unknown>): Promise<ActorReply> => {
    try {
      return { ok: true, body: await fn(req) }
    } catch (err) {
      if (isApiError(err)) return { ok: false, error: err.toData() }
      // This host stopped serving the actor mid-request (its fence lost, its heartbeat lapsed past the wait), in a
      // path no kind mapped itself: the retryable 503 of an actor moving, never a 500.
      const moving = asMoving(subject.split('.')[1] ?? 'actor')(err)
      if (isApiError(moving)) {
        log.warn({ rid: req.rid, subject, cause: String((err as Error).message) }, 'actor stopped serving mid-request')
        return { ok: false, error: moving.toData() }
      }
      // NATS or JetStream unavailable for a moment (quorum lost, an election, a node restarting): a 503 the client
      // retries, logged without a stack since it is no bug of ours. Anything else is one: a 500 that reveals nothing.
      const unavailableNow = storeUnavailable(err)
      if (unavailableNow) log.warn({ rid: req.rid, subject, cause: String((err as Error).message) }, 'store temporarily unavailable')
      else log.error({ err, rid: req.rid, subject }, 'actor failed')
      const error = (unavailableNow ?? fail('internal')).toData()
      // A write that got no answer may be stored: the gateway must not invite a blind retry of a create.
      if (unavailableNow && isOutcomeUnknown(err)) error.outcomeUnknown = true
      return { ok: false, error }
    }
  }
  /** A request off NATS: decoded, answered, the reply encoded. */
  const run = async (m: Msg, fn: (req: ActorRequest) => Promise<unknown>) => {
    let r: ActorReply
    try {
      r = await answer(decode<ActorRequest>(m.data), m.subject, fn)
    } catch {
      r = { ok: false, error: fail('undecodable_request').toData() }
    }
    if (m.reply) m.respond(encode(r))
  }

  /** The runner of a subject served in this process right now, as its NATS subscription would serve it. */
  const local: LocalActors = (subject) => {
    const owned = parsePartitionedSubject(subject)
    if (owned) {
      const k = partitioned.get(owned.kind)
      // Only while the partition is subscribed here and served: anything unsettled (a heartbeat gap, a hand-over)
      // goes over NATS, where the partition's subscription decides as it does for every other caller.
      if (!k?.subs.has(owned.partition) || !serving(owned.kind, owned.partition)) return undefined
      return (req) => answer(req, subject, (r) => dispatch(k.rt.ops, r, { placement: 'owner', id: owned.id }))
    }
    const shared = parseActorSubject(subject)
    const table = shared && tables.get(shared.kind)
    return table ? (req) => answer(req, subject, (r) => dispatch(table, r, { placement: 'any' })) : undefined
  }
  const moves = new PartitionMoves()
  const wire: ActorWire = settings.localCalls === false ? actorWire(nc, moves) : localFirst(nc, actorWire(nc, moves), local)
  const ctx: HostContext = {
    nc,
    js,
    jsm,
    kvm,
    storage,
    log,
    hostId,
    settings,
    serves: (kind, p) => serving(kind, p),
    whenServing: (kind, p, ms) => whenServing(kind, p, ms),
    holding: (kind, p) => holding(kind, p),
    sandboxHosts,
    alone: () => !othersLive(),
    keyringConflict: () => keyringConflict(liveBeats()),
    client: actorClient({ wire, local: (kind) => tables.get(kind) }),
  }

  // One kind after the other: on a cluster that has just formed, creating every stream at once makes JetStream
  // answer "stream not found" and time out where one at a time succeeds.
  const kinds = opts.kinds ?? ACTOR_KINDS
  lap('buckets', began)
  for (const def of kinds) {
    const { kind } = def.contract
    const kindAt = performance.now()
    const rt = await def.start(ctx)
    lap(kind, kindAt)
    closers.push(() => rt.close())
    tables.set(kind, rt.ops)
    localTails ??= rt.localTails
    const placements = new Set(Object.values(def.contract.ops).map((op) => op.placement))
    if (placements.has('any')) {
      subs.push(
        nc.subscribe(actorSubject(kind, '*'), {
          queue: actorQueue(kind),
          callback: (_e, m) => void run(m, (req) => dispatch(rt.ops, req, { placement: 'any' })),
        }),
      )
    }
    if (placements.has('owner')) partitioned.set(kind, { rt, subs: new Map() })
  }

  let described: { http_url?: string } = {}
  const can = abilitiesOf(settings)
  const startedAt = Date.now()
  const placement = new Placement({
    hosts: hostsKv,
    ttlMs,
    placement: placementKv,
    hostId,
    kinds: [...partitioned.keys()],
    beat: () => ({ pid: process.pid, hostname: os.hostname(), role: opts.role, started_at: startedAt, can, ...described }),
    presence: natsPresence(nc, hostId),
    log,
    events: {
      gained: async (kind, p) => {
        const k = partitioned.get(kind)!
        const state = { handedOver: false }
        const sub = nc.subscribe(partitionWildcard(kind, p), {
          callback: (_e, m) => {
            const id = parsePartitionedSubject(m.subject)?.id ?? ''
            void run(m, async (req) => {
              // Our heartbeat lapsed (a stalled loop, a SIGSTOP, an unreachable store): another host may be
              // taking this partition over. Never serve it until the records say it is still ours; answer only
              // after that settles, so the new owner, subscribed too, answers first. A partition already given up
              // (its subscription draining) is answered as late, for the same reason.
              if (!placement.serves(kind, p) && !(await placement.whenServing(kind, p, SETTLE_MS))) {
                // Handed over: the next owner is named only once this subscription has drained, so it cannot have
                // this request; the caller's wire sends it again at once.
                if (state.handedOver) throw fail('handed_over')
                if (!placement.holds(kind, p)) await new Promise((r) => setTimeout(r, SETTLE_MS))
                throw fail('failing_over')
              }
              return dispatch(k.rt.ops, req, { placement: 'owner', id })
            })
          },
        })
        k.subs.set(p, { sub, state })
        await k.rt.acquired?.(p)
      },
      moved: (kind, p) => moves.changed(kind, p),
      lost: async (kind, p, handOver) => {
        const k = partitioned.get(kind)!
        const { sub, state } = k.subs.get(p) ?? {}
        k.subs.delete(p)
        if (state) state.handedOver = handOver
        // Drained, not just unsubscribed: requests the server routed here before it saw the unsubscribe are still
        // answered (503, the partition is no longer served: the client retries and reaches the new owner) instead
        // of being dropped unanswered, which left their callers waiting out their whole timeout. The new owner
        // subscribes only after this host named it, so it never received those requests itself.
        // Bounded: a drain waits for the server's answer, which a connection in trouble may never bring, and the
        // placement pass that gives this partition away must not wait on it (what it holds back goes unserved).
        if (sub) await drained(sub, DRAIN_MS).catch(() => sub.unsubscribe())
        await k.rt.released?.(p, handOver)
      },
    },
  })
  moves.suspect = (kind, p) => placement.suspect(kind, p)
  serving = (kind, p) => placement.serves(kind, p)
  whenServing = (kind, p, ms) => placement.whenServing(kind, p, ms)
  holding = (kind, p) => placement.revision(kind, p)
  othersLive = () => placement.othersLive()
  liveBeats = () => placement.liveBeats()
  const placedAt = performance.now()
  await placement.start()
  lap('placement', placedAt)
  lap('total', began)
  for (const left of kindsLeft(can)) log.warn(`this host owns no ${left.replace(':', ' partition while a host that can is live:')}`)

  subs.push(
    nc.subscribe(HOST_PING, {
      callback: (_e, m) => {
        const waiting = placement.unready()
        m.respond(encode({ host: hostId, ready: waiting === undefined, waiting }))
      },
    }),
  )
  log.info(
    {
      kinds: kinds.map((k) => k.contract.kind),
      partitions: Object.fromEntries([...partitioned.keys()].map((k) => [k, placement.owns(k).length])),
      startMs: took,
    },
    'actor host ready',
  )

  let stopping: Promise<void> | undefined
  return {
    id: hostId,
    wire,
    localTails,
    tokenKey,
    can,
    liveHosts: () => placement.liveBeats().length,
    describe(info) {
      described = { ...described, ...info }
    },
    stop() {
      stopping ??= (async () => {
        for (const s of subs) s.unsubscribe()
        await placement.stop()
        for (const c of closers) await c().catch((err) => log.warn({ err }, 'actor kind close failed'))
      })()
      return stopping
    },
  }
}
