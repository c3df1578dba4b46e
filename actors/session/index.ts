import { internal } from '../../protocol/errors.js'
import type { Session } from '../../protocol/session.js'
import { Buckets, partitionOf } from '../../protocol/subjects.js'
import { Projection } from '../kit/projection.js'
import { retryWhileStarting } from '../kit/retry.js'
import type { HostContext, PartitionedActorKind, SharedActorKind } from '../kit/types.js'
import { SessionActor, type ActorDeps, type SessionSettings } from './actor.js'
import { sessionOps } from './behaviour.js'
import { listSessions } from './list.js'
import { ensureEventsStream } from './log.js'
import { modelClient } from './model.js'
import { SESSION_PREFIX, WORK_PREFIX, sessionStore, type SessionRecord } from './state.js'

export const DEFAULT_SESSION_SETTINGS: SessionSettings = { retries: 4, retryBaseMs: 1000, idleMs: 30_000, maxTokens: 8192 }
/** A session with a live shell keeps it (and stays in memory) this long after its last work. */
const SANDBOX_IDLE_MS = 10 * 60_000

const openBucket = (ctx: HostContext) =>
  retryWhileStarting('sessions bucket', () => ctx.kvm.create(Buckets.sessions, { history: 1 }))

/**
 * Sessions: one actor per session, on the host that leases the session's partition. Actors live in memory
 * only while they have work (or a live shell); an idle one leaves, and the next request rebuilds it from its
 * record and its history. Taking a partition over resumes exactly the sessions marked as having work.
 */
export const sessionKind: PartitionedActorKind = {
  kind: 'session',
  placement: 'partitioned',
  async start(ctx) {
    const kv = await openBucket(ctx)
    await retryWhileStarting('events stream', () => ensureEventsStream(ctx.jsm))
    const settings = { ...DEFAULT_SESSION_SETTINGS, ...ctx.settings.session }
    const { modelBaseUrl, anthropicApiKey } = ctx.settings
    const live = new Map<string, SessionActor>()
    const loading = new Map<string, Promise<SessionActor | undefined>>()

    const deps: ActorDeps = {
      ctx,
      store: sessionStore(kv),
      kv,
      model: modelBaseUrl || anthropicApiKey ? modelClient(modelBaseUrl, anthropicApiKey) : undefined,
      settings,
      gone: (a) => {
        if (live.get(a.id) === a) live.delete(a.id)
      },
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
        return a && !a.dead ? a : undefined
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
        if (t - a.lastActive >= limit && (await a.passivate())) deps.gone(a)
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
        // Sessions the previous owner left with work in flight: rebuild and resume them.
        const ids: string[] = []
        for await (const k of await kv.keys(`${WORK_PREFIX}>`)) {
          const id = k.slice(WORK_PREFIX.length)
          if (partitionOf(id) === p) ids.push(id)
        }
        for (const id of ids) {
          actors.get(id).then((a) => a?.kick(), (err) => ctx.log.error({ err, session: id }, 'session could not be resumed'))
        }
      },
      async released(p) {
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
    const kv = await openBucket(ctx)
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
