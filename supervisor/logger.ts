import { pino, type DestinationStream, type Logger } from 'pino'
import { isTransientNatsError } from '../actors/kit/nats-errors.js'

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
  return pino(opts, batchedStderr())
}

/**
 * Stderr for a line per request. A write per line, synchronous or handed to libuv's thread pool, took a third of the
 * request path's CPU under load, and a synchronous one blocks the loop whenever a pipe reader falls behind. Batching
 * inside sonic-boom (its `minLength`) costs as much again: it measures the whole queued string at every line. So
 * lines are joined here, in batches of 32 KiB or whatever 250 ms gathered, and each batch goes to sonic-boom, which
 * writes asynchronously. What is queued is written synchronously when the process exits, a fatal error included;
 * a SIGKILL loses at most those 250 ms of lines.
 */
function batchedStderr(): DestinationStream {
  const dest = pino.destination({ dest: 2, sync: false })
  let lines: string[] = []
  let chars = 0
  const flush = () => {
    if (!lines.length) return
    const batch = lines.join('')
    lines = []
    chars = 0
    dest.write(batch)
  }
  setInterval(flush, LOG_FLUSH_MS).unref()
  process.on('exit', () => {
    flush()
    dest.flushSync()
  })
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
