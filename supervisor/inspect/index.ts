import type { Connected, Command, Io } from './io.js'
import { connectForInspect, UsageError } from './io.js'
import { keys, KEYS_USAGE } from './keys.js'
import { status, STATUS_USAGE } from './status/index.js'
import { sub, SUB_USAGE } from './sub.js'
import { tail, TAIL_USAGE } from './tail.js'

interface Usage {
  synopsis: string
  summary: string
}

/** The inspection words of the `troupe` CLI. */
export const INSPECT_COMMANDS: Record<string, { run: Command; usage: Usage }> = {
  sub: { run: sub, usage: SUB_USAGE },
  tail: { run: tail, usage: TAIL_USAGE },
  status: { run: status, usage: STATUS_USAGE },
  keys: { run: keys, usage: KEYS_USAGE },
}

const usages = Object.values(INSPECT_COMMANDS).map((c) => c.usage)
const width = Math.max(...usages.map((u) => u.synopsis.length))
/** Their lines in the CLI's usage. */
export const INSPECT_USAGE = [
  ...usages.map((u) => `  ${u.synopsis.padEnd(width)}  ${u.summary}`),
  '',
  `These connect to NATS_URL, or to the embedded NATS of the \`troupe start\` running on TROUPE_DATA_DIR.`,
].join('\n')

/** How long closing the connection may take after Ctrl-C before the process leaves anyway. */
const CLOSE_MS = 500

/**
 * Runs `troupe <word> …` and resolves with the exit code: 0 when done or stopped by Ctrl-C, 2 on wrong
 * arguments. Other errors are thrown for the CLI to print.
 */
export async function runInspect(word: string, args: string[]): Promise<number> {
  const cmd = INSPECT_COMMANDS[word]!
  const usage = `usage: troupe ${cmd.usage.synopsis}\n  ${cmd.usage.summary}`
  if (args.includes('-h') || args.includes('--help')) {
    console.log(usage)
    return 0
  }
  const stop = new AbortController()
  let conn: Connected | undefined
  const interrupt = () => {
    // A second Ctrl-C while closing means now.
    if (stop.signal.aborted) process.exit(130)
    stop.abort()
  }
  process.on('SIGINT', interrupt)
  process.on('SIGTERM', interrupt)
  // `troupe sub … | head` closes our stdout: that is the reader saying it has seen enough.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => (err.code === 'EPIPE' ? process.exit(0) : undefined))
  const io: Io = {
    connect: async () => (conn ??= await connectForInspect(`troupe ${word}`)),
    out: (line) => void process.stdout.write(`${line}\n`),
    note: (line) => void process.stderr.write(`${line}\n`),
    signal: stop.signal,
  }
  try {
    await cmd.run(args, io)
    return 0
  } catch (err) {
    if (!(err instanceof UsageError)) throw err
    console.error(`troupe ${word}: ${err.message}\n${usage}`)
    return 2
  } finally {
    const c = conn as Connected | undefined
    if (c) await Promise.race([c.nc.close().catch(() => undefined), new Promise((r) => setTimeout(r, CLOSE_MS).unref())])
  }
}
