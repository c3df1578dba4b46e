import { readFileSync } from 'node:fs'
import './memory.js' // first: process-wide V8 heap settings
import { readConfig } from './config.js'
import { createLogger } from './logger.js'
import type { Role } from './roles.js'
import { lockDataDir } from './datadir.js'
import { INSPECT_COMMANDS, INSPECT_USAGE, runInspect } from './inspect/index.js'

/** The package's version: package.json is one level up from supervisor/, two from its compiled copy in dist/. */
const VERSION: string = (() => {
  for (const rel of ['../package.json', '../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(rel, import.meta.url), 'utf8'))
      if (pkg.name === 'troupe') return pkg.version
    } catch {}
  }
  return 'unknown'
})()
/** A clean stop (hand-over included) must fit in this; the bar is 3 s. */
const STOP_BUDGET_MS = 3000

const USAGE = `usage: troupe <start|serve|orchestrate|sandbox> [-strict|--strict]
       troupe <sub|tail|status|keys> ...
       troupe webhooks listen ...

  start        all in one: embedded nats-server (unless NATS_URL is set), gateway and actor host
  serve        gateway and actor host, joining the NATS at NATS_URL
  orchestrate  joins NATS_URL as the worker role: fires deployments' schedules (start does too, serve never)
  sandbox      joins NATS_URL as a sandbox host: runs the tools of sessions whose serve hosts have
               TROUPE_SANDBOX_PLACEMENT=remote

  -strict, --strict  require the compatibility headers (also TROUPE_STRICT=1); through npm: npm start -- --strict

${INSPECT_USAGE}

  webhooks listen  a local webhook receiver printing each delivery verified (troupe webhooks listen --help)

Environment: PORT (8080), HOST (127.0.0.1), NATS_URL, TROUPE_NATS_PORT, TROUPE_NATS_HOST (127.0.0.1),
TROUPE_DATA_DIR (./.troupe), TROUPE_STRICT, TROUPE_AUTH (auto), TROUPE_ADMIN_KEY_FILE, TROUPE_MODEL_BASE_URL,
ANTHROPIC_API_KEY, LOG_LEVEL (info), LOG_FORMAT (json|pretty). The full list, with defaults: README.md.`

const ROLES: readonly string[] = ['start', 'serve', 'orchestrate', 'sandbox']
const STRICT_FLAGS: readonly string[] = ['-strict', '--strict']

async function main(argv: string[]): Promise<void> {
  if (argv[0] && Object.hasOwn(INSPECT_COMMANDS, argv[0])) process.exit(await runInspect(argv[0], argv.slice(1)))
  if (argv[0] === 'webhooks') process.exit(await webhooks(argv.slice(1)))
  const flags = argv.filter((a) => a.startsWith('-'))
  const words = argv.filter((a) => !a.startsWith('-'))
  const role = (words[0] ?? 'start') as Role
  if (flags.includes('-h') || flags.includes('--help')) {
    console.log(USAGE)
    return
  }
  // Anything not understood stops here, named: an option dropped on the way (a misspelt --strict) must not go unnoticed.
  const unknown = flags.filter((f) => !STRICT_FLAGS.includes(f))
  const problem = unknown.length
    ? `unknown option ${unknown.join(' ')}`
    : !ROLES.includes(role)
      ? `unknown command ${role}`
      : words.length > 1
        ? `unexpected argument ${words.slice(1).join(' ')}`
        : undefined
  if (problem) {
    console.error(`troupe: ${problem}\n\n${USAGE}`)
    process.exit(2)
  }
  const cfg = readConfig(process.env, flags.length > 0)
  const log = await createLogger(cfg.logLevel, role, cfg.logFormat)
  // Loaded here, not above: the server's modules take seconds to load, which `troupe sub|tail|status` need not wait for.
  // Before loading the server: a second start on a locked data directory refuses at once.
  const lock = role === 'orchestrate' ? undefined : lockDataDir(cfg.dataDir, role)
  const { startRole } = await import('./roles.js')
  const running = await startRole(role, cfg, log, VERSION, lock)
  if (running.url) console.log(`troupe ${role} listening on ${running.url}${cfg.strict ? ' (strict mode)' : ''}`)
  else console.log(`troupe ${role} ready`)
  const width = Math.max(...running.facts.map(([k]) => k.length))
  console.log(running.facts.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`).join('\n'))

  let stopping = false
  const stop = async (signal: string) => {
    if (stopping) return
    stopping = true
    const t0 = Date.now()
    log.info({ signal }, 'stopping')
    // Hand-over, actor shutdown and the embedded server's flush take well under this; past it, something hangs.
    const force = setTimeout(() => {
      console.log(`troupe ${role} did not stop within ${STOP_BUDGET_MS} ms; exiting anyway`)
      process.exit(1)
    }, STOP_BUDGET_MS)
    force.unref()
    await running.stop()
    console.log(`troupe ${role} stopped in ${Date.now() - t0} ms`)
    process.exit(0)
  }
  process.on('SIGINT', () => void stop('SIGINT'))
  process.on('SIGTERM', () => void stop('SIGTERM'))
}

/** `troupe webhooks listen …`: the exit code. */
async function webhooks(args: string[]): Promise<number> {
  const { LISTEN_USAGE, listen, parseListen } = await import('./webhooks-listen.js')
  if (args[0] !== 'listen' || args.includes('-h') || args.includes('--help')) {
    console.log(LISTEN_USAGE)
    return args[0] === 'listen' ? 0 : 2
  }
  const o = parseListen(args.slice(1), process.env)
  if (typeof o === 'string') {
    console.error(`troupe webhooks listen: ${o}\n\n${LISTEN_USAGE}`)
    return 2
  }
  const stop = new AbortController()
  process.on('SIGINT', () => stop.abort())
  process.on('SIGTERM', () => stop.abort())
  return listen(o, (line) => console.log(line), stop.signal)
}

main(process.argv.slice(2)).catch((err) => {
  console.error(`troupe: ${err instanceof Error ? err.message : String(err)}`)
  process.exit(1)
})
