import { aborted, parse, UsageError, type Io } from './io.js'
import { decodePayload, headersObject, toJsonLine } from './payload.js'

export const SUB_USAGE = { synopsis: 'sub <subject>...', summary: 'every message on the subjects (wildcards * and > allowed), decoded, one JSON line each' }

/**
 * `troupe sub <subject>...`: one JSON line per message, `{subject, reply?, headers?, encoding, data}`, until
 * Ctrl-C. `encoding` says how `data` was read (msgpack, json, text, or base64 when it is none of them).
 */
export async function sub(args: string[], io: Io): Promise<void> {
  const { positionals } = parse(args, {})
  if (!positionals.length) throw new UsageError("name at least one subject, e.g. troupe sub 'troupe.>'")
  for (const subject of positionals) {
    if (!/^[^\s.]+(\.[^\s.]+)*$/.test(subject)) throw new UsageError(`${JSON.stringify(subject)} is not a NATS subject (tokens separated by dots, no spaces)`)
  }
  const { nc, url } = await io.connect()
  for (const subject of positionals) {
    nc.subscribe(subject, {
      callback: (err, msg) => {
        if (err) return io.note(`subscription to ${subject} failed: ${err.message}`)
        const line: Record<string, unknown> = { subject: msg.subject }
        if (msg.reply) line.reply = msg.reply
        if (msg.headers) {
          line.headers = headersObject(msg.headers)
          if (msg.headers.code) line.status = `${msg.headers.code} ${msg.headers.description}`.trim()
        }
        Object.assign(line, decodePayload(msg.data))
        io.out(toJsonLine(line))
      },
    })
  }
  // The server has the subscriptions once it answers a round trip: from here on nothing is missed.
  await nc.flush()
  io.note(`listening on ${positionals.join(', ')} at ${url}; Ctrl-C to stop`)
  await aborted(io.signal)
}
