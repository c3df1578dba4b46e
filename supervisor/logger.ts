import { pino, type Logger } from 'pino'

/** Lines are written once this many bytes are queued. */
const LOG_BUFFER_BYTES = 32 * 1024
/** ...or this long after they were logged, whichever comes first (ms). */
export const LOG_FLUSH_MS = 250

/**
 * JSON lines on stderr, so stdout stays for the lines that say where we listen and that we stopped.
 * `LOG_FORMAT=pretty` prints coloured, human lines instead (for a terminal; not for log shippers).
 * Lines about a request carry its `rid` explicitly (an AsyncLocalStorage would do it for every line, but its
 * promise hooks cost about 2 ms of a 7 ms turn).
 *
 * JSON lines are buffered and written asynchronously: a write per line, synchronous or handed to libuv's thread
 * pool, took a third of the request path's CPU under load (one line per request); in 32 KiB batches, 2.5 %. A
 * synchronous write also blocks the loop whenever a pipe reader falls behind. Lines go out once 32 KiB are queued or within 250 ms, and what is
 * queued is written synchronously when the process exits, a fatal error included (pino registers that for
 * asynchronous destinations); a SIGKILL loses at most those 250 ms of lines.
 */
export async function createLogger(level: string, role: string, format: 'json' | 'pretty' = 'json'): Promise<Logger> {
  const opts = { level, base: { role, pid: process.pid } }
  if (format === 'pretty') {
    const { default: pretty } = await import('pino-pretty')
    return pino(opts, pretty({ destination: 2, sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,role,hostname' }))
  }
  const dest = pino.destination({ dest: 2, sync: false, minLength: LOG_BUFFER_BYTES, maxWrite: 4 * LOG_BUFFER_BYTES })
  // Flushed while lines arrive, and once more after the last: a flush that found a write in flight leaves what
  // was queued behind it for the next one.
  let logged = 0
  let flushedAt = 0
  let again = false
  setInterval(() => {
    if (logged === flushedAt && !again) return
    again = logged !== flushedAt
    flushedAt = logged
    dest.flush()
  }, LOG_FLUSH_MS).unref()
  const streamWrite = (line: string) => {
    logged++
    return line
  }
  return pino({ ...opts, hooks: { streamWrite } }, dest)
}
