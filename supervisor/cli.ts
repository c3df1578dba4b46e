import './memory.js' // first: process-wide V8 heap settings
import { readConfig } from './config.js'
import { createLogger } from './logger.js'
import { startRole, type Role } from './roles.js'

const USAGE = `usage: troupe <start|serve|orchestrate> [-strict|--strict]

  start        all in one: embedded nats-server (unless NATS_URL is set), gateway and actor host
  serve        gateway and actor host, joining the NATS at NATS_URL
  orchestrate  the worker role (deployment schedules, webhook deliveries), joining NATS_URL

Environment: PORT (8080), HOST (127.0.0.1), NATS_URL, TROUPE_DATA_DIR (./.troupe), TROUPE_MODEL_BASE_URL,
ANTHROPIC_API_KEY, TROUPE_VAULT_KEYRING_FILE, LOG_LEVEL (info).`

async function main(argv: string[]): Promise<void> {
  const flags = argv.filter((a) => a.startsWith('-'))
  const words = argv.filter((a) => !a.startsWith('-'))
  const role = (words[0] ?? 'start') as Role
  if (flags.includes('-h') || flags.includes('--help')) {
    console.log(USAGE)
    return
  }
  const unknown = flags.filter((f) => f !== '-strict' && f !== '--strict')
  if (!['start', 'serve', 'orchestrate'].includes(role) || words.length > 1 || unknown.length) {
    console.error(USAGE)
    process.exit(2)
  }
  const strict = flags.length > 0
  const cfg = readConfig(process.env, strict)
  const log = createLogger(cfg.logLevel, role)
  const running = await startRole(role, cfg, log)
  if (running.url) console.log(`troupe ${role} listening on ${running.url}${strict ? ' (strict mode)' : ''}`)
  else console.log(`troupe ${role} ready`)

  let stopping = false
  const stop = async (signal: string) => {
    if (stopping) return
    stopping = true
    log.info({ signal }, 'stopping')
    const force = setTimeout(() => process.exit(1), 10_000)
    force.unref()
    await running.stop()
    process.exit(0)
  }
  process.on('SIGINT', () => void stop('SIGINT'))
  process.on('SIGTERM', () => void stop('SIGTERM'))
}

main(process.argv.slice(2)).catch((err) => {
  console.error(`troupe: ${err instanceof Error ? err.message : String(err)}`)
  process.exit(1)
})
