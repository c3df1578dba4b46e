import { internal } from '../../protocol/errors.js'
import type { Session } from '../../protocol/session.js'
import { Buckets, partitionOf } from '../../protocol/subjects.js'
import { Projection } from '../kit/projection.js'
import { retryWhileStarting } from '../kit/retry.js'
import type { PartitionedActorKind, SharedActorKind } from '../kit/types.js'
import { SessionActor, type ActorDeps, type SessionSettings } from './actor.js'
import { sessionOps } from './behaviour.js'
import { listSessions } from './list.js'
import { ensureEventsStream } from './log.js'
import { agentResolver } from './admission.js'
import { modelClient } from './model.js'
import { EnvironmentRefs } from './references.js'
import { SESSION_PREFIX, WORK_PREFIX, sessionStore, type SessionRecord } from './state.js'
import { OwnedPartitions } from '../kit/owned.js'
import { openBucket } from '../kit/buckets.js'

export const DEFAULT_SESSION_SETTINGS: SessionSettings = { retries: 4, retryBaseMs: 1000, idleMs: 30_000, maxTokens: 8192 }
/** A session whose actor fails this many times in a row has its turn ended with a session.error. */
const MAX_REBUILDS = 5
/**
 * The longest pause between attempts to rebuild a session (or list a partition's work): a store outage (a NATS
 * election takes up to about 15 s) should not leave sessions waiting much longer than it lasted.
 */
const REBUILD_MAX_WAIT_MS = 5000
/** A session with a live shell keeps it (and stays in memory) this long after its last work. */
const SANDBOX_IDLE_MS = 10 * 60_000

/**
 * Sessions: one actor per session, on the host that leases the session's partition. Actors live in memory
 * only while they have work (or a live shell); an idle one leaves, and the next request rebuilds it from its
 * record and its history. Taking a partition over resumes exactly the sessions marked as having work.
 */
export const sessionKind: PartitionedActorKind = {
  kind: 'session',
  placement: 'partitioned',
  async start(ctx) {
    const [kv, envKv, agentsKv] = await Promise.all([
      openBucket(ctx.kvm, ctx.storage, Buckets.sessions), openBucket(ctx.kvm, ctx.storage, Buckets.environments), openBucket(ctx.kvm, ctx.storage, Buckets.agents),
    ])
    await retryWhileStarting('events stream', () => ensureEventsStream(ctx.storage))
    const settings = { ...DEFAULT_SESSION_SETTINGS, ...ctx.settings.session }
    const { modelBaseUrl, anthropicApiKey } = ctx.settings
    const live = new Map<string, SessionActor>()
    const loading = new Map<string, Promise<SessionActor | undefined>>()
    /** Partitions this host serves: only their actors are rebuilt after a failure, only their records cached. */
    const owned = new OwnedPartitions()
    /** Consecutive failures per session, for the rebuild back-off. */
    const failures = new Map<string, number>()

    const deps: ActorDeps = {
      ctx,
      store: sessionStore(kv, owned),
      kv,
      model: modelBaseUrl || anthropicApiKey ? modelClient(modelBaseUrl, anthropicApiKey, ctx.log) : undefined,
      environments: new EnvironmentRefs(envKv, ctx.log),
      agents: agentResolver(agentsKv),
      settings,
      gone: (a) => {
        if (live.get(a.id) === a) live.delete(a.id)
      },
      crashed: (a, own) => {
        if (live.get(a.id) === a) live.delete(a.id)
        // Only the session's own failures count towards giving its turn up.
        const n = (failures.get(a.id) ?? 0) + (own ? 1 : 0)
        failures.set(a.id, n)
        rebuild(a.id, Math.max(0, n - 1))
      },
    }

    /**
     * Rebuilds a failed actor from what was stored, at once the first time, then backing off, while this host
     * owns it: a session with work in flight is never left without an actor driving it until a client happens
     * to post. A store that cannot be read yet is tried again; an actor that keeps failing has its turn ended.
     */
    const rebuild = (id: string, attempt: number) => {
      const t = setTimeout(() => {
        const p = partitionOf(id)
        if (!owned.has(p)) return failures.delete(id)
        // Our heartbeat lapsed: wait until the records say whether the partition is still ours.
        if (!ctx.serves('session', p)) return rebuild(id, attempt + 1)
        actors.get(id).then(
          (b) => {
            if (!b) return failures.delete(id)
            const n = failures.get(id) ?? 0
            if (n < MAX_REBUILDS) return b.kick()
            failures.delete(id)
            b.abandon(`The session's actor failed ${n} times in a row while running this turn; the turn was ended. Send a message to continue.`)
          },
          (err) => {
            ctx.log.warn({ err, session: id }, 'session could not be rebuilt yet')
            rebuild(id, attempt + 1)
          },
        )
      }, attempt === 0 ? 0 : Math.min(REBUILD_MAX_WAIT_MS, 250 * 2 ** attempt))
      t.unref()
    }

    /**
     * Resumes the sessions of partition p that the previous owner left with work in flight. Listing them needs the
     * store: while it cannot answer (the host took the partition over during a NATS fault), the listing is tried
     * again, backing off, as long as the partition stays ours.
     */
    const resumeWork = async (p: number, attempt = 0): Promise<void> => {
      try {
        const ids: string[] = []
        for await (const k of await kv.keys(`${WORK_PREFIX}>`)) {
          const id = k.slice(WORK_PREFIX.length)
          if (partitionOf(id) === p) ids.push(id)
        }
        for (const id of ids) rebuild(id, 0)
      } catch (err) {
        if (!owned.has(p)) return
        ctx.log.warn({ err, partition: p }, 'sessions with work in flight could not be listed yet')
        setTimeout(() => void resumeWork(p, attempt + 1), Math.min(REBUILD_MAX_WAIT_MS, 250 * 2 ** attempt)).unref()
      }
    }

    const actors = {
      async get(id: string) {
        const a = live.get(id)
        if (a && !a.dead) return a
        let p = loading.get(id)
        if (!p) {
          p = SessionActor.load(deps, id).then((loaded) => {
            if (loaded) live.set(id, loaded)
            return loaded
          }).finally(() => loading.delete(id))
          loading.set(id, p)
        }
        return p
      },
      peek(id: string) {
        const a = live.get(id)
        if (!a || a.dead) return undefined
        // A session being read stays in memory: its reads need no KV round trip while it is polled.
        a.lastActive = Date.now()
        return a
      },
      add(a: SessionActor) {
        live.set(a.id, a)
      },
    }

    // Passivation: idle actors leave memory (their state is the record and the history).
    const sweep = setInterval(async () => {
      const t = Date.now()
      for (const a of live.values()) {
        const limit = a.hasSandbox ? SANDBOX_IDLE_MS : settings.idleMs
        if (t - a.lastActive >= limit && (await a.passivate())) {
          deps.gone(a)
          failures.delete(a.id)
        }
      }
    }, Math.max(50, Math.min(settings.idleMs / 2, 5000)))
    sweep.unref()

    const ops = sessionOps(deps, actors)
    return {
      async handle(id, req) {
        const op = ops[req.op]
        if (!op) throw internal(`No operation ${req.op} on sessions`)
        return op(id, req)
      },
      async acquired(p) {
        owned.add(p)
        await resumeWork(p)
      },
      async released(p) {
        owned.delete(p)
        for (const a of [...live.values()]) {
          if (partitionOf(a.id) !== p) continue
          live.delete(a.id)
          await a.shutdown()
        }
      },
      async close() {
        clearInterval(sweep)
        await Promise.all([...live.values()].map((a) => a.shutdown()))
        live.clear()
      },
    }
  },
}

/** GET /v1/sessions: any host answers from its projection of the sessions bucket. */
export const sessionsKind: SharedActorKind = {
  kind: 'sessions',
  placement: 'shared',
  async start(ctx) {
    const kv = await openBucket(ctx.kvm, ctx.storage, Buckets.sessions)
    const projection = new Projection<Session>(kv, SESSION_PREFIX, (r: SessionRecord) => r.session)
    await projection.start()
    return {
      ops: {
        async list(req) {
          await projection.fresh()
          return listSessions(projection, req.query as never)
        },
      },
      close: async () => projection.stop(),
    }
  },
}
