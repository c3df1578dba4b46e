import type { NatsConnection } from '@nats-io/transport-node'
import path from 'node:path'
import type { Logger } from 'pino'
import { startGateway, type Gateway } from '../gateway/server.js'
import { TRANSPORT_LABEL } from '../gateway/transport.js'
import type { Config } from './config.js'
import type { DataDirLock } from './datadir.js'
import { connectNats, redact } from './nats-connect.js'
import { startActorHost, type ActorHost } from './host.js'
import { actorAccess } from './actor-access.js'
import { checkServerVersion, startEmbeddedNats, type EmbeddedNats } from './nats-server.js'
import { watchConnection, type ConnectionState } from './nats-status.js'
import { chooseReplicas, type ReplicaChoice } from './replica-count.js'
import { jetstream } from '@nats-io/jetstream'
import { Kvm } from '@nats-io/kv'
import { startScheduler, type RunningScheduler } from '../actors/deployment/index.js'
import { actorWire, type Keyring, listExceptions, loadKeyring, openBucket, retryWhileStarting, Roster } from '../actors/kit/index.js'
import { openSandboxBackend, raiseFileLimit, type SandboxBackend } from '../sandbox/index.js'
import os from 'node:os'
import { SandboxHost, SecretsKey, sandboxHostDeps } from '../actors/workdir/index.js'
import { Buckets, SANDBOX_HOST_PREFIX, type SandboxHostBeat } from '../protocol/subjects.js'
import { BEAT_EVERY_MS, HOST_TTL_MS, hostsTtl } from './placement.js'
import { joinHint } from './join-hint.js'
import { kindsLeft } from './cluster-config.js'
import { startDeliveries } from '../actors/webhook/index.js'
import { type RunningKeyChecks, startKeyChecks } from './api-keys.js'
import { collectProcessMetrics, setRecording } from '../metrics/index.js'
import { type MetricsServer, serveMetrics } from './metrics.js'

export type Role = 'start' | 'serve' | 'orchestrate' | 'sandbox'

export interface Running {
  /** Where the gateway listens, when this role has one. */
  url?: string
  /** What a person needs to find everything, printed once the process is ready. */
  facts: Array<[string, string]>
  stop(): Promise<void>
}

async function joinNats(url: string, log: Logger, role: Role): Promise<NatsConnection> {
  // An orchestrator's connection is named apart in the server's connection list, where hosts are `troupe`.
  const nc = await connectNats(url, role === 'orchestrate' || role === 'sandbox' ? { name: `troupe-${role}` } : {})
  checkServerVersion(nc.info?.version ?? '0.0.0')
  if (!nc.info?.jetstream) log.warn('the NATS server does not advertise JetStream; Troupe needs it')
  return nc
}

/**
 * Starts a role. `start` is all-in-one: embedded nats-server (unless NATS_URL), gateway and actor host.
 * `lock` holds the data directory (the embedded store, the sessions' working directories) for this process;
 * every role but `orchestrate` needs one, and releases it when it stops.
 */
export async function startRole(role: Role, cfg: Config, log: Logger, version: string, lock?: DataDirLock): Promise<Running> {
  if (!cfg.natsUrl && role !== 'start') {
    lock?.release()
    throw new Error(`troupe ${role} needs NATS_URL: it joins an existing NATS cluster (use \`troupe start\` for an embedded one)`)
  }
  if (!lock && role !== 'orchestrate') throw new Error(`troupe ${role} needs its data directory locked`)
  // Before anything records: off, every metric stays as it is and nothing is served.
  setRecording(cfg.metrics)
  if (cfg.metrics) collectProcessMetrics()
  // Descriptors are what a flood of sandbox connections would take; every one the hard limit allows is ours to use.
  const files = raiseFileLimit()
  if (files) log.info({ nofile: files }, `file descriptors: ${files.soft} (the soft limit raised to the hard one)`)
  // Read before anything starts: a keyring file that cannot be used stops start-up with the file and the problem named.
  let keyring: Keyring | undefined
  try {
    keyring = role === 'sandbox' ? undefined : openKeyring(cfg, log)
  } catch (err) {
    lock?.release()
    throw err
  }
  let nats: EmbeddedNats | undefined
  let nc: NatsConnection | undefined
  let connection: ConnectionState | undefined
  let host: ActorHost | undefined
  let gateway: Gateway | undefined
  let sandbox: SandboxBackend | undefined
  let replicas: ReplicaChoice | undefined
  let scheduler: RunningScheduler | undefined
  let sandboxHost: RunningSandboxHost | undefined
  let deliveries: { stop(): Promise<void> } | undefined
  let keys: RunningKeyChecks | undefined
  let metricsServer: MetricsServer | undefined
  const teardown = async () => {
    gateway?.close()
    keys?.stop()
    await metricsServer?.close()
    await deliveries?.stop().catch((err) => log.warn({ err }, 'webhook deliveries stop failed'))
    await sandboxHost?.stop().catch((err) => log.warn({ err }, 'sandbox host stop failed'))
    await scheduler?.stop().catch((err) => log.warn({ err }, 'scheduler stop failed'))
    // With NATS gone there is nobody to hand over to and nothing to flush: closing first fails what waits on it at
    // once (a heartbeat, a hand-over write) instead of after its timeout, so the stop still fits its budget.
    if (connection && !connection.connected) await nc?.close().catch(() => undefined)
    await host?.stop().catch((err) => log.warn({ err }, 'actor host stop failed'))
    await nc?.drain().catch(() => undefined)
    await nats?.stop()
    lock?.release()
  }
  try {
    let natsUrl = cfg.natsUrl
    if (!natsUrl) {
      nats = await startEmbeddedNats(path.join(cfg.dataDir, 'jetstream'), (msg) => log.warn(msg), {
        host: cfg.natsHost,
        port: cfg.natsPort,
        portFile: path.join(cfg.dataDir, NATS_PORT_FILE),
        holdFd: lock?.fd,
      }).catch((err: Error) => {
        throw cfg.natsPort ? new Error(`TROUPE_NATS_PORT=${cfg.natsPort}: ${err.message}`, { cause: err }) : err
      })
      natsUrl = nats.url
      lock?.update({ nats_pgid: nats.pgid, nats_url: nats.url, nats_monitor_url: nats.monitorUrl })
      log.info({ url: natsUrl, monitor: nats.monitorUrl, dataDir: cfg.dataDir }, 'embedded nats-server started')
    } else lock?.update({ nats_url: natsUrl })
    nc = await joinNats(natsUrl, log, role)
    connection = watchConnection(nc, log)
    replicas = await chooseReplicas(cfg.replicas, nc, natsUrl)
    log.info({ replicas: replicas.count, explicit: replicas.explicit }, `replicas: ${replicas.count} (${replicas.why})`)
    // `start` runs its sessions' sandboxes itself; `serve` too, unless they run on sandbox hosts.
    const remoteSandboxes = role === 'serve' && cfg.sandboxPlacement === 'remote'
    if (role === 'sandbox' || ((role === 'start' || role === 'serve') && !remoteSandboxes)) {
      sandbox = openSandboxBackend(cfg.sandbox)
      log.info({ sandbox: sandbox.kind }, `sandbox: ${sandbox.kind} (${sandbox.why})`)
    } else if (remoteSandboxes) log.info('sandbox: remote (sessions run their tools on the sandbox hosts, troupe sandbox)')
    if (role === 'sandbox') sandboxHost = await startSandboxRole(nc, log, cfg, replicas, sandbox!, lock!.hostId)
    if (role === 'start' || role === 'serve') {
      const mcpAllowed = listExceptions(cfg.mcpAllowHosts)
      if (mcpAllowed)
        log.warn({ hosts: mcpAllowed }, `TROUPE_MCP_ALLOW_HOSTS is set: sessions' MCP connections may reach ${mcpAllowed.join(', ')} although not public`)
      if (!cfg.modelBaseUrl && !cfg.anthropicApiKey) {
        log.warn('neither TROUPE_MODEL_BASE_URL nor ANTHROPIC_API_KEY is set: session turns will end with a session.error until they are')
      }
      // Before the host joins the cluster's placement: protected mode refuses to start here, disturbing nothing.
      const jsm = await retryWhileStarting('jetstream', () => jetstream(nc!).jetstreamManager(), { log })
      keys = await startKeyChecks(nc, { jsm, replicas: replicas.count, lowerReplicas: replicas.explicit, log }, cfg, log, () => host?.liveHosts() ?? 1)
      host = await startActorHost(
        nc,
        log,
        {
          modelBaseUrl: cfg.modelBaseUrl,
          anthropicApiKey: cfg.anthropicApiKey,
          dataDir: cfg.dataDir,
          replicas: replicas.count,
          replicasExplicit: replicas.explicit,
          localCalls: cfg.localCalls,
          session: cfg.session,
          sandbox,
          sandboxPlacement: remoteSandboxes ? 'remote' : 'here',
          fileMaxBytes: cfg.fileLimit,
          sweepAgeMs: cfg.sweepAgeMs,
          scheduleClock: cfg.scheduleClock,
          keyring,
          mcpAllowHosts: cfg.mcpAllowHosts,
        },
        { hostId: lock!.hostId, role },
      )
      gateway = await startGateway({
        nc,
        log,
        keys: keys.checks,
        actors: actorAccess(nc, host.wire, host.localTails, host.tokenKey),
        port: cfg.port,
        host: cfg.host,
        transport: cfg.http,
        strict: cfg.strict,
        sseKeepaliveMs: cfg.sseKeepaliveMs,
        parseBudget: cfg.parseBudget,
        fileLimit: cfg.fileLimit,
      })
      const url = `http://${cfg.host}:${gateway.port}`
      host.describe({ http_url: url })
      lock?.update({ http_url: url })
    }
    // Schedules fire only where something orchestrates: `serve` alone never fires.
    if (role === 'start' || role === 'orchestrate') {
      const js = jetstream(nc)
      const jsm = await retryWhileStarting('jetstream', () => js.jetstreamManager(), { log })
      const kvm = new Kvm(js)
      const storage = { jsm, replicas: replicas.count, lowerReplicas: replicas.explicit, log }
      const wire = host?.wire ?? actorWire(nc)
      scheduler = await startScheduler({
        kvm,
        storage,
        wire,
        clock: cfg.scheduleClock,
        log,
      })
      // Webhook deliveries run where schedules fire, and only with the keyring that opens their secrets.
      if (keyring) {
        if (cfg.webhookDevHosts.size) {
          log.warn(
            { hosts: Object.fromEntries(cfg.webhookDevHosts) },
            'TROUPE_WEBHOOK_DEV_HOSTS is set: these webhook host names are delivered to loopback, unchecked (development only)',
          )
        }
        deliveries = await startDeliveries({
          js,
          kvm,
          storage,
          wire,
          keyring,
          devHosts: cfg.webhookDevHosts,
          log,
        })
      }
    }
    if (cfg.metrics && cfg.metricsPort !== undefined) metricsServer = await serveMetrics(cfg.host, cfg.metricsPort)
  } catch (err) {
    await teardown()
    throw err
  }
  const url = gateway ? `http://${cfg.host}:${gateway.port}` : undefined
  const facts: Array<[string, string]> = []
  if (url) facts.push(['HTTP', `${url} (${TRANSPORT_LABEL[gateway!.transport]}, request bodies up to ${mib(gateway!.bodyLimit)})`])
  facts.push(['NATS', nats ? `${nats.url} (embedded; monitoring ${nats.monitorUrl})` : redact(cfg.natsUrl!)])
  if (nats) facts.push(['scale', joinHint(cfg, nats, process.env)])
  if (replicas) facts.push(['replicas', `${replicas.count} (${replicas.why})`])
  if (scheduler) facts.push(['schedule', `fired here (scheduler ${scheduler.id})`])
  if (scheduler)
    facts.push([
      'webhooks',
      deliveries
        ? `delivered from here${cfg.webhookDevHosts.size ? ` (TROUPE_WEBHOOK_DEV_HOSTS: ${[...cfg.webhookDevHosts.keys()].join(', ')} to loopback)` : ''}`
        : 'not delivered (no keyring)',
    ])
  if (lock) facts.push(['data', cfg.dataDir])
  if (host) {
    facts.push(['host', host.id])
    facts.push([
      'model',
      cfg.modelBaseUrl ??
        (cfg.anthropicApiKey ? 'https://api.anthropic.com (ANTHROPIC_API_KEY)' : 'no model configured (set TROUPE_MODEL_BASE_URL or ANTHROPIC_API_KEY)'),
    ])
  }
  if (sandbox)
    facts.push([
      'sandbox',
      `${sandbox.kind} (${sandbox.why})${sandboxHost ? `; runs the sandboxes of sessions served elsewhere (host ${sandboxHost.id})` : ''}`,
    ])
  else if (host) facts.push(['sandbox', 'remote: on the sandbox hosts (troupe sandbox), TROUPE_SANDBOX_PLACEMENT=remote'])
  if (role !== 'sandbox') facts.push(['keyring', keyringFact(cfg, keyring)])
  if (host) {
    const left = kindsLeft(host.can)
    facts.push(['owns', left.length ? `partitions of every kind, but none while a host that can is live of ${left.join('; ')}` : 'partitions of every kind'])
  }
  if (url) facts.push(['strict', cfg.strict ? 'on (compatibility headers required)' : 'off'])
  if (keys) facts.push(['auth', keys.fact()])
  facts.push(['metrics', metricsFact(cfg, url, metricsServer)])
  facts.push(['version', version])
  return { url, facts, stop: teardown }
}

interface RunningSandboxHost {
  id: string
  stop(): Promise<void>
}

/**
 * `troupe sandbox`: runs the sandboxes of sessions whose hosts send their tools here (actors/workdir/sandbox-host.ts),
 * and says so in the sandbox hosts' roster (`sandbox.<host id>` in `troupe_hosts`) for as long as it does.
 */
async function startSandboxRole(
  nc: NatsConnection,
  log: Logger,
  cfg: Config,
  replicas: ReplicaChoice,
  backend: SandboxBackend,
  hostId: string,
): Promise<RunningSandboxHost> {
  const js = jetstream(nc)
  const jsm = await retryWhileStarting('jetstream', () => js.jetstreamManager(), { log })
  const storage = { jsm, replicas: replicas.count, lowerReplicas: replicas.explicit, log }
  const deps = await sandboxHostDeps({ nc, storage, log, dataDir: cfg.dataDir, backend, session: cfg.session, fileMaxBytes: cfg.fileLimit })
  // Sessions seal their vaults' secrets to this key (in memory only) for this host's egress proxies.
  const secretsKey = new SecretsKey()
  const server = new SandboxHost({ nc, hostId, log, deps, secretsKey })
  server.start()
  const started = Date.now()
  const beat = (): SandboxHostBeat => ({
    at: Date.now(),
    pid: process.pid,
    hostname: os.hostname(),
    kind: backend.kind,
    enforces_network: backend.enforcesNetwork,
    data_dir: cfg.dataDir,
    started_at: started,
    secrets_key: secretsKey.publicKey,
  })
  const hostsKv = await openBucket(new Kvm(js), storage, Buckets.hosts, { ttl: HOST_TTL_MS })
  const roster = new Roster(hostsKv, {
    prefix: SANDBOX_HOST_PREFIX,
    beatMs: BEAT_EVERY_MS,
    ttlMs: await hostsTtl(hostsKv, log),
    self: { id: hostId, value: beat },
    log,
  })
  await roster.start()
  log.info({ host: hostId, sandbox: backend.kind }, 'sandbox host ready')
  return {
    id: hostId,
    async stop() {
      // Out of the roster first: no session binds here any more, then what runs here ends.
      await roster.stop()
      await server.stop()
    },
  }
}

/** The file in the data directory that keeps the embedded server's port across restarts. */
const NATS_PORT_FILE = 'nats-port'

/** How another host joins this embedded server, and whether the command still works after a restart. */
const mib = (bytes: number) => (bytes % (1024 * 1024) === 0 ? `${bytes / 1024 / 1024} MiB` : `${(bytes / 1024).toFixed(0)} KiB`)

/** The operator keyring, when `TROUPE_VAULT_KEYRING_FILE` names one; without it vaults (and webhooks) are off, said once. */
function openKeyring(cfg: Config, log: Logger): Keyring | undefined {
  if (!cfg.vaultKeyringFile) {
    log.warn('TROUPE_VAULT_KEYRING_FILE is not set: vaults and webhooks are off (vault writes and sessions naming vaults answer 422)')
    return undefined
  }
  const keyring = loadKeyring(cfg.vaultKeyringFile)
  log.info({ file: cfg.vaultKeyringFile, keys: keyring.ids, sealing: keyring.current }, 'operator keyring loaded')
  return keyring
}

const metricsFact = (cfg: Config, url: string | undefined, server: MetricsServer | undefined) => {
  if (!cfg.metrics) return 'off (TROUPE_METRICS=off)'
  const where = [url && `${url}/metrics`, server && `http://${cfg.host}:${server.port}/metrics (TROUPE_METRICS_PORT)`].filter(Boolean)
  return where.length ? where.join(', ') : 'not served: this role has no gateway (set TROUPE_METRICS_PORT)'
}

const keyringFact = (cfg: Config, keyring: Keyring | undefined) =>
  keyring
    ? `${cfg.vaultKeyringFile} (${keyring.ids.length} key${keyring.ids.length > 1 ? 's' : ''}; new secrets sealed with ${keyring.current})`
    : 'none: vaults and webhooks are off (set TROUPE_VAULT_KEYRING_FILE)'
