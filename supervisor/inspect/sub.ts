import type { Msg } from '@nats-io/transport-node'
import { aborted, parse, UsageError, type Io } from './io.js'
import { decodePayload, headersObject, toJsonLine } from './payload.js'

export const SUB_USAGE = {
  synopsis: 'sub [--replies] <subject>...',
  summary: 'every message on the subjects (wildcards * and > allowed), decoded, one JSON line each; --replies adds the answer to each request',
}

/** Requests whose answer `--replies` still waits for, at most: an unanswered request is forgotten past this many. */
const AWAITED_MAX = 10_000

/**
 * `troupe sub <subject>...`: one JSON line per message, `{subject, reply?, headers?, encoding, data}`, until
 * Ctrl-C. `encoding` says how `data` was read (msgpack, json, text, or base64 when it is none of them).
 * `--replies` also prints the answer to each request seen, `{subject, reply_to, …}`: replies go to the caller's
 * `_INBOX.…`, which every request of a process shares (heartbeats' acknowledgements included), so subscribing to
 * `_INBOX.>` shows mostly noise.
 */
export async function sub(args: string[], io: Io): Promise<void> {
  const { positionals, values } = parse(args, { replies: { type: 'boolean', short: 'r' } })
  if (!positionals.length) throw new UsageError("name at least one subject, e.g. troupe sub 'troupe.>'")
  for (const subject of positionals) {
    if (!/^[^\s.]+(\.[^\s.]+)*$/.test(subject)) throw new UsageError(`${JSON.stringify(subject)} is not a NATS subject (tokens separated by dots, no spaces)`)
  }
  const { nc, url } = await io.connect()
  /** Reply subject → the subject of the request that awaits it. */
  const awaited = new Map<string, string>()
  const print = (msg: Msg, replyTo?: string) => {
    const line: Record<string, unknown> = { subject: msg.subject }
    if (replyTo) line.reply_to = replyTo
    if (msg.reply) line.reply = msg.reply
    if (msg.headers) {
      line.headers = headersObject(msg.headers)
      if (msg.headers.code) line.status = `${msg.headers.code} ${msg.headers.description}`.trim()
    }
    Object.assign(line, decodePayload(msg.data))
    io.out(toJsonLine(line))
  }
  if (values.replies) {
    nc.subscribe('_INBOX.>', {
      callback: (err, msg) => {
        if (err) return io.note(`subscription to replies failed: ${err.message}`)
        const replyTo = awaited.get(msg.subject)
        if (replyTo === undefined) return
        awaited.delete(msg.subject)
        print(msg, replyTo)
      },
    })
  }
  for (const subject of positionals) {
    nc.subscribe(subject, {
      callback: (err, msg) => {
        if (err) return io.note(`subscription to ${subject} failed: ${err.message}`)
        if (values.replies && msg.reply) {
          awaited.set(msg.reply, msg.subject)
          if (awaited.size > AWAITED_MAX) awaited.delete(awaited.keys().next().value!)
        }
        print(msg)
      },
    })
  }
  // The server has the subscriptions once it answers a round trip: from here on nothing is missed.
  await nc.flush()
  io.note(`listening on ${positionals.join(', ')}${values.replies ? ' and their replies' : ''} at ${url}; Ctrl-C to stop`)
  await aborted(io.signal)
}
