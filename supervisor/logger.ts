import { pino, type Logger } from 'pino'

/**
 * JSON lines on stderr, so stdout stays for the lines that say where we listen and that we stopped.
 * Written asynchronously: a line is queued and written by the next write call while the one before is in flight,
 * so a burst of requests costs one write per batch, not a blocking write per line (a synchronous write per request
 * line took 13 % of the request path). What is queued is written synchronously when the process exits, a fatal
 * error included (pino registers that for asynchronous destinations); a SIGKILL loses at most the lines of one
 * write in flight.
 * `LOG_FORMAT=pretty` prints coloured, human lines instead (for a terminal; not for log shippers).
 * Lines about a request carry its `rid` explicitly (an AsyncLocalStorage would do it for every line, but its
 * promise hooks cost about 2 ms of a 7 ms turn).
 */
export async function createLogger(level: string, role: string, format: 'json' | 'pretty' = 'json'): Promise<Logger> {
  const opts = { level, base: { role, pid: process.pid } }
  if (format === 'pretty') {
    const { default: pretty } = await import('pino-pretty')
    return pino(opts, pretty({ destination: 2, sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,role,hostname' }))
  }
  return pino(opts, pino.destination({ dest: 2, sync: false }))
}
