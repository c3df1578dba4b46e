import { pino, type Logger } from 'pino'

/** JSON lines on stderr, so stdout stays for the one human line that says where we listen. */
export const createLogger = (level: string, role: string): Logger =>
  pino({ level, base: { role, pid: process.pid } }, pino.destination(2))
