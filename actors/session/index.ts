import { SessionKind } from '../../protocol/ops/session.js'
import type { Session } from '../../protocol/session.js'
import { Buckets, partitionOf } from '../../protocol/subjects.js'
import { type ActorKindDef, ensureOutbox, implement, KeyedActors, modelRetry, NO_EXCEPTIONS, openBucket, Outbox, Projection } from '../kit/index.js'
import { SessionActor } from './actor/index.js'
import type { ActorDeps, SessionSettings } from './actor/index.js'
import { agentResolver } from './admission/index.js'
import { sessionOps } from './handlers/index.js'
import { listSessions } from './handlers/index.js'
import { SessionTails } from './log/index.js'
import { ensureEventsStream } from './log/index.js'
import { modelClient } from './turn/index.js'
import { EnvironmentRefs } from './admission/index.js'
import { SESSION_PREFIX, type SessionRecord } from './history/index.js'
import { SkillTexts } from './turn/index.js'
import { DEFAULT_WORKDIR_SETTINGS, workdirDeps, Workdirs } from '../workdir/index.js'
import { bearerAuth, mcpClients, NO_AUTH } from '../mcp/index.js'
import { EnvSecretSource, vaultSecrets } from '../vault/index.js'

// What other kinds and the supervisor use of sessions: a deployment's admission checks a run's session as a create
// does; webhooks and the gateway read sessions' event logs; the inspect commands read their records.
export { type AgentResolver, agentResolver, checkCreateInput, checkMcpEgress, checkVaultRefs, prefixed, snapshotAgent } from './admission/index.js'
export { RunningByKey, SESSION_PREFIX, type SessionRecord, sessionKey } from './history/index.js'
export { ensureEventsStream, readSessionEvents } from './log/index.js'

export const DEFAULT_SESSION_SETTINGS: SessionSettings = {
  retries: modelRetry.maximumAttempts - 1,
  retryBaseMs: modelRetry.initialIntervalMs,
  idleMs: 30_000,
  runningRecordMs: 200,
  maxTokens: 8192,
  maxToolRounds: 200,
  maxCutOffCalls: 3,
  contextWindow: 200_000,
  ...DEFAULT_WORKDIR_SETTINGS,
}

/**
 * Sessions: one actor per session, on the host that owns it (kit/keyed-actors.ts). Actors live in memory only
 * while they have work (or a live shell); an idle one leaves, and the next request rebuilds it from its record and
 * its history. A host taking sessions over resumes exactly those marked as having work. Listing spans every
 * session: any host answers it from its projection of the sessions bucket.
 */
export const sessionKind: ActorKindDef = {
  contract: SessionKind,
  async start(ctx) {
    const kv = await openBucket(ctx.kvm, ctx.storage, Buckets.sessions)
    // Each waits out a forming cluster itself (kit/streams.ts).
    await ensureEventsStream(ctx.storage)
    await ensureOutbox(ctx.storage)
    const projection = new Projection<Session, SessionRecord>(kv, SESSION_PREFIX, (r) => r.session)
    await projection.start(ctx.log)
    const settings = { ...DEFAULT_SESSION_SETTINGS, ...ctx.settings.session }
    const { modelBaseUrl, anthropicApiKey } = ctx.settings
    const actors: KeyedActors<SessionActor> = new KeyedActors(ctx, { kind: 'session', kv, load: (id) => SessionActor.load(deps, id), idleMs: settings.idleMs })
    // Taken only while this host serves the partition: every append of the session is made here from then on.
    const localTails = ctx.settings.localCalls !== false
    const tails = new SessionTails({
      here: (id) => localTails && actors.owned.has(partitionOf(id)) && actors.serves(id),
      // This process's gateway tails over NATS too when calls are not local.
      othersMayTail: () => !localTails || !ctx.alone(),
      log: ctx.log,
    })
    const workdir = await workdirDeps({
      js: ctx.js,
      kvm: ctx.kvm,
      storage: ctx.storage,
      client: ctx.client,
      log: ctx.log,
      dataDir: ctx.settings.dataDir,
      backend: ctx.settings.sandbox,
      settings,
      fileMaxBytes: ctx.settings.fileMaxBytes,
    })
    const { sandboxHosts } = ctx
    const remote = sandboxHosts && { roster: sandboxHosts, nc: ctx.nc, fence: (id: string) => ctx.holding('session', partitionOf(id)) ?? 0 }
    const secrets = vaultSecrets(ctx.client, ctx.settings.keyring)
    const deps: ActorDeps = {
      ctx,
      // Its creation is `session.created` (webhooks), written with the record; its deletion `session.deleted`, under the
      // id the outbox publishes it with too (actor.ts), so the event is kept even if that publish fails.
      store: actors.records<SessionRecord>(SESSION_PREFIX, (key, was, next) => {
        const id = key.slice(SESSION_PREFIX.length)
        if (was === undefined && next) return [{ type: 'session.created', id }]
        return was && !next ? [{ type: 'session.deleted', id, source: id }] : []
      }),
      model: modelBaseUrl || anthropicApiKey ? modelClient(modelBaseUrl, anthropicApiKey, ctx.log) : undefined,
      environments: new EnvironmentRefs(ctx.client, ctx.log),
      agents: agentResolver(ctx.client),
      files: workdir.files,
      settings,
      modelRetry: { ...modelRetry, initialIntervalMs: settings.retryBaseMs, maximumAttempts: settings.retries + 1 },
      actors,
      tails,
      workdirs: new Workdirs(workdir, remote),
      outbox: new Outbox(ctx.js),
      mcp: mcpClients({
        egress: { except: ctx.settings.mcpAllowHosts ?? NO_EXCEPTIONS },
        // A session's MCP credentials come from its vaults, in their frozen order (vault/secrets.ts).
        auth: (vaultIds) => (vaultIds.length ? bearerAuth((url, stale) => secrets.mcpBearer(vaultIds, url, stale)) : NO_AUTH),
      }),
      // Vault records are read here directly, and opened with this host's keyring: secrets never cross the actor wire.
      envSecrets: new EnvSecretSource(await openBucket(ctx.kvm, ctx.storage, Buckets.vaults), ctx.settings.keyring),
      // SKILL.md read from the bundles the sandboxes unpack, for launches.
      skillTexts: new SkillTexts(workdir.bundles),
    }
    const ops = implement(SessionKind, {
      ...sessionOps(deps, actors),
      async list({ query }) {
        await projection.fresh()
        return listSessions(projection, query)
      },
    })
    const rt = actors.runtime(ops, () => projection.stop())
    return {
      ...rt,
      // Once the partition's actors have stopped (their last appends acknowledged and fed), before the next owner
      // is named on a hand-over.
      released: async (p, handOver) => {
        await rt.released?.(p, handOver)
        tails.released(p)
      },
      localTails: localTails ? tails : undefined,
    }
  },
}
