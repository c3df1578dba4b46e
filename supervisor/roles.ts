import { connect, type NatsConnection } from '@nats-io/transport-node'
import type { Logger } from 'pino'
import { startGateway, type Gateway } from '../gateway/server.js'
import type { Config } from './config.js'
import { startActorHost, type ActorHost } from './host.js'
import { checkServerVersion, startEmbeddedNats, type EmbeddedNats } from './nats-server.js'
import path from 'node:path'

export type Role = 'start' | 'serve' | 'orchestrate'

export interface Running {
  /** Where the gateway listens, when this role has one. */
  url?: string
  stop(): Promise<void>
}

async function connectNats(url: string, log: Logger): Promise<NatsConnection> {
  const nc = await connect({ servers: url, name: 'troupe', maxReconnectAttempts: -1, reconnectTimeWait: 250 })
  checkServerVersion(nc.info?.version ?? '0.0.0')
  if (!nc.info?.jetstream) log.warn('the NATS server does not advertise JetStream; Troupe needs it')
  return nc
}

/** Starts a role. `start` is all-in-one: embedded nats-server (unless NATS_URL), gateway and actor host. */
export async function startRole(role: Role, cfg: Config, log: Logger): Promise<Running> {
  let nats: EmbeddedNats | undefined
  let natsUrl = cfg.natsUrl
  if (!natsUrl) {
    if (role !== 'start') throw new Error(`troupe ${role} needs NATS_URL: it joins an existing NATS cluster (use \`troupe start\` for an embedded one)`)
    nats = await startEmbeddedNats(path.join(cfg.dataDir, 'jetstream'), (msg) => log.warn(msg))
    natsUrl = nats.url
    log.info({ url: natsUrl, dataDir: cfg.dataDir }, 'embedded nats-server started')
  }
  const nc = await connectNats(natsUrl, log)
  let host: ActorHost | undefined
  let gateway: Gateway | undefined
  try {
    if (role === 'start' || role === 'serve') {
      if (!cfg.modelBaseUrl && !cfg.anthropicApiKey) {
        log.warn('neither TROUPE_MODEL_BASE_URL nor ANTHROPIC_API_KEY is set: session turns will end with a session.error until they are')
      }
      host = await startActorHost(nc, log, { modelBaseUrl: cfg.modelBaseUrl, anthropicApiKey: cfg.anthropicApiKey, dataDir: cfg.dataDir, session: cfg.session })
      gateway = await startGateway({ nc, log, port: cfg.port, host: cfg.host, strict: cfg.strict, sseKeepaliveMs: cfg.sseKeepaliveMs })
    }
    if (role === 'orchestrate') log.info('orchestrator ready (deployment schedules and webhook deliveries run here)')
  } catch (err) {
    await host?.stop().catch(() => undefined)
    await nc.close().catch(() => undefined)
    await nats?.stop()
    throw err
  }
  return {
    url: gateway ? `http://${cfg.host}:${gateway.port}` : undefined,
    async stop() {
      gateway?.close()
      await host?.stop().catch((err) => log.warn({ err }, 'actor host stop failed'))
      await nc.drain().catch(() => undefined)
      await nats?.stop()
    },
  }
}
