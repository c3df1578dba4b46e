import { performance } from 'node:perf_hooks'
import { pino, type DestinationStream, type Logger } from 'pino'
import { isTransientNatsError } from '../actors/kit/index.js'

/** Lines are handed to the writer once this many characters are queued... */
const LOG_BATCH_CHARS = 32 * 1024
/** ...or this long after they were logged, whichever comes first (ms). */
export const LOG_FLUSH_MS = 250

/**
 * JSON lines on stderr, so stdout stays for the lines that say where we listen and that we stopped.
 * `LOG_FORMAT=pretty` prints coloured, human lines instead (for a terminal; not for log shippers).
 * Lines about a request carry its `rid` explicitly (an AsyncLocalStorage would do it for every line, but its
 * promise hooks cost about 2 ms of a 7 ms turn).
 *
 * JSON lines are batched and written asynchronously (`batchedStderr`).
 */
export async function createLogger(level: string, role: string, format: 'json' | 'pretty' = 'json'): Promise<Logger> {
  const opts = { level, base: { role, pid: process.pid }, serializers: { err: serializeError } }
  if (format === 'pretty') {
    const { default: pretty } = await import('pino-pretty')
    return pino(opts, pretty({ destination: 2, sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,role,hostname' }))
  }
  const log: Logger = pino(
    opts,
    batchedStderr((lines) => log.warn({ dropped: lines }, `dropped ${lines} log lines: stderr was not read fast enough`)),
  )
  return log
}

/** Lines waiting for a stderr reader that does not keep up are dropped past this many characters. */
const LOG_BACKLOG_CHARS = 4 * 1024 * 1024
/** At exit, what is queued is written for at most this long: a reader that stopped reading must not hold the exit. */
const EXIT_FLUSH_MS = 500

/**
 * Stderr for a line per request. A write per line, synchronous or handed to libuv's thread pool, took a third of the
 * request path's CPU under load, and a synchronous one blocks the loop whenever a pipe reader falls behind. Batching
 * inside sonic-boom (its `minLength`) costs as much again: it measures the whole queued string at every line. So
 * lines are joined here, in batches of 32 KiB or whatever 250 ms gathered, and each batch goes to sonic-boom, which
 * writes asynchronously. A reader that falls behind (a full pipe) makes lines queue up to 4 MiB, then they are
 * dropped and counted (a line says how many once the reader takes a write again), so memory stays bounded and requests never
 * wait for the log. What is queued is written synchronously when the process exits, a fatal error included, for at
 * most 500 ms; a SIGKILL loses at most the last 250 ms of lines.
 */
function batchedStderr(onDropped: (lines: number) => void): DestinationStream {
  let exitBy = Number.POSITIVE_INFINITY
  // Registered before the destination: it runs before pino's own flush at exit (on-exit-leak-free), so the deadline is
  // set for both.
  process.on('exit', () => {
    exitBy = performance.now() + EXIT_FLUSH_MS
    try {
      flush()
      dest.flushSync()
    } catch {
      // The reader is gone or stuck: what is left is lost, and pino's flush at exit must not try again.
      dest.destroy()
    }
  })
  const dest = pino.destination({
    dest: 2,
    sync: false,
    maxLength: LOG_BACKLOG_CHARS,
    // A full pipe: keep trying while running (the write is asynchronous), and give up at exit once the time is up.
    retryEAGAIN: () => performance.now() < exitBy,
  })
  let lines: string[] = []
  let chars = 0
  let inFlight = 0
  let dropped = 0
  dest.on('drop', () => {
    dropped += inFlight
  })
  // Said once the reader takes a write again.
  dest.on('write', () => {
    if (!dropped) return
    const n = dropped
    dropped = 0
    onDropped(n)
  })
  const flush = () => {
    if (!lines.length) return
    const batch = lines.join('')
    inFlight = lines.length
    lines = []
    chars = 0
    dest.write(batch)
  }
  setInterval(flush, LOG_FLUSH_MS).unref()
  return {
    write(line: string) {
      lines.push(line)
      chars += line.length
      if (chars >= LOG_BATCH_CHARS) flush()
    },
  }
}

/** NATS or JetStream unavailable for a moment is no bug of ours: its type and message say it all, a stack only adds noise. */
function serializeError(err: unknown) {
  if (err instanceof Error && isTransientNatsError(err)) return { type: err.name, message: err.message }
  return pino.stdSerializers.err(err as Error)
}
