import { pino, type Logger } from 'pino'
import { isTransientNatsError } from '../actors/kit/nats-errors.js'

/**
 * JSON lines on stderr, so stdout stays for the lines that say where we listen and that we stopped.
 * `LOG_FORMAT=pretty` prints coloured, human lines instead (for a terminal; not for log shippers).
 * Lines about a request carry its `rid` explicitly (an AsyncLocalStorage would do it for every line, but its
 * promise hooks cost about 2 ms of a 7 ms turn).
 */
export async function createLogger(level: string, role: string, format: 'json' | 'pretty' = 'json'): Promise<Logger> {
  const opts = { level, base: { role, pid: process.pid }, serializers: { err: serializeError } }
  if (format === 'pretty') {
    const { default: pretty } = await import('pino-pretty')
    return pino(opts, pretty({ destination: 2, sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,role,hostname' }))
  }
  return pino(opts, pino.destination(2))
}

/** NATS or JetStream unavailable for a moment is no bug of ours: its type and message say it all, a stack only adds noise. */
function serializeError(err: unknown) {
  if (err instanceof Error && isTransientNatsError(err)) return { type: err.name, message: err.message }
  return pino.stdSerializers.err(err as Error)
}
