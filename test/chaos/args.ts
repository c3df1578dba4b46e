// The command line of `npm run chaos`: every knob has a default small enough for a shared two-core machine.
import { openSandboxBackend, readSandboxSetting, type SandboxKind } from '../../sandbox/index.js'
import { FAULT_KINDS, type FaultKind, SANDBOX_HOST_FAULTS } from './types.js'

export interface ChaosArgs {
  seed: number
  /** How long the load runs (faults included); checks and settling come after. */
  seconds: number
  sessions: number
  hosts: number
  /** Sessions that also have an SSE reader. */
  readers: number
  /** Empty with `--no-faults`. */
  faults: FaultKind[]
  /** Keep the run directory (stores, logs, tag files) even when every check passes. */
  keep: boolean
  /** The hosts' sandbox backend (`TROUPE_SANDBOX`): isolated where it can start here, else local. */
  sandbox: SandboxKind
  /**
   * `troupe sandbox` processes (default 0: every serve host runs its own sessions' sandboxes). With some, the serve
   * hosts run with TROUPE_SANDBOX_PLACEMENT=remote and the sandbox hosts use `sandbox` as their backend.
   */
  sandboxHosts: number
  /** Webhook endpoints, a receiver and their checks (default on; `--no-webhooks` leaves them out). */
  webhooks: boolean
  /** Memory stores written by API writers and sessions, and their checks (default on where sessions can mount them). */
  memories: boolean
  /** MCP sessions against a local MCP server, and their checks (default on; `--no-mcp` leaves them out). */
  mcp: boolean
  /**
   * The official client's workers on self-hosted sessions (workers.ts; default min(20, 2 × sessions)); 0 leaves the
   * self-hosted sessions, the workers and their checks out.
   */
  workers: number
}

export const USAGE = `usage: npm run chaos -- [--seed N] [--seconds S] [--sessions N] [--hosts N] [--readers N]
                       [--no-faults | --faults ${FAULT_KINDS.join(',')}] [--sandbox isolated|local] [--sandbox-hosts N] [--no-webhooks] [--no-memories] [--no-mcp] [--workers N] [--keep]

  --seed N       fault schedule and load choices (default 1)
  --seconds S    load duration (default 60)
  --sessions N   sessions doing turns (default 50)
  --hosts N      troupe serve processes (default 3)
  --readers N    sessions that also have an SSE reader (default min(10, sessions))
  --no-faults    load only
  --faults LIST  fault kinds to draw from (default all; sandbox-kill only with --sandbox-hosts)
  --sandbox K    the sandbox backend (default isolated where bubblewrap starts here, else local)
  --sandbox-hosts N  troupe sandbox processes running the sessions' sandboxes (default 0: the serve hosts run them)
  --no-webhooks  no webhook endpoints, receiver or webhook checks
  --no-memories  no memory stores, their writers and sessions, or memory checks (none anyway with --sandbox local)
  --no-mcp       no MCP sessions, their server or MCP checks
  --workers N    work.worker() processes on self-hosted sessions, some SIGKILLed (default min(20, 2 × sessions); 0: none)
  --keep         keep the run directory even when every check passes`

export function parseArgs(argv: string[]): ChaosArgs {
  const known = new Set([
    '--seed',
    '--seconds',
    '--sessions',
    '--hosts',
    '--readers',
    '--faults',
    '--no-faults',
    '--sandbox',
    '--sandbox-hosts',
    '--keep',
    '--no-webhooks',
    '--no-memories',
    '--no-mcp',
    '--workers',
    '--help',
    '-h',
  ])
  for (const a of argv) {
    if (a.startsWith('-') && !known.has(a)) throw new Error(`unknown flag ${a}\n${USAGE}`)
  }
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(USAGE)
    process.exit(0)
  }
  const value = (name: string): string | undefined => {
    const i = argv.indexOf(`--${name}`)
    if (i < 0) return undefined
    const v = argv[i + 1]
    if (v === undefined || v.startsWith('--')) throw new Error(`--${name} needs a value`)
    return v
  }
  const int = (name: string, dflt: number, min: number): number => {
    const v = value(name)
    if (v === undefined) return dflt
    const n = Number(v)
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer of at least ${min} (was ${JSON.stringify(v)})`)
    return n
  }
  const sessions = int('sessions', 50, 1)
  const sandboxHosts = int('sandbox-hosts', 0, 0)
  let faults: FaultKind[] = FAULT_KINDS.filter((k) => sandboxHosts > 0 || !SANDBOX_HOST_FAULTS.includes(k))
  const list = value('faults')
  if (list !== undefined) {
    faults = list
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean) as FaultKind[]
    const bad = faults.filter((f) => !FAULT_KINDS.includes(f))
    if (bad.length || !faults.length) throw new Error(`--faults takes a comma-separated list of ${FAULT_KINDS.join(', ')} (got ${JSON.stringify(list)})`)
    const needHosts = faults.filter((f) => SANDBOX_HOST_FAULTS.includes(f))
    if (needHosts.length && !sandboxHosts) throw new Error(`--faults ${needHosts.join(',')} needs --sandbox-hosts N (N > 0)`)
  }
  if (argv.includes('--no-faults')) {
    if (list !== undefined) throw new Error('--no-faults and --faults exclude each other')
    faults = []
  }
  const sandbox = value('sandbox')
  if (sandbox !== undefined && sandbox !== 'isolated' && sandbox !== 'local')
    throw new Error(`--sandbox takes isolated or local (got ${JSON.stringify(sandbox)})`)
  return {
    seed: int('seed', 1, 0),
    seconds: int('seconds', 60, 5),
    sessions,
    hosts: int('hosts', 3, 1),
    readers: Math.min(sessions, int('readers', Math.min(10, sessions), 0)),
    faults,
    keep: argv.includes('--keep'),
    webhooks: !argv.includes('--no-webhooks'),
    memories: !argv.includes('--no-memories'),
    mcp: !argv.includes('--no-mcp'),
    workers: int('workers', Math.min(20, 2 * sessions), 0),
    sandboxHosts,
    sandbox: sandbox ?? openSandboxBackend(readSandboxSetting({ ...process.env, TROUPE_SANDBOX: '' })).kind,
  }
}
