import { jetstream, JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream'
import { Kvm } from '@nats-io/kv'
import { storedItems } from '../../protocol/event-item.js'
import { isInternalType } from '../../protocol/events.js'
import { isId } from '../../protocol/ids.js'
import { Buckets, EVENTS_STREAM, eventsWildcard, threadOf } from '../../protocol/subjects.js'
import { sessionKey } from '../../actors/session/index.js'
import { needJetStream, parse, UsageError, type Io } from './io.js'
import { readStream } from './read-stream.js'
import { summarize } from './summary.js'

export const TAIL_USAGE = {
  synopsis: 'tail <session_id> [--follow]',
  summary: "a session's stored events, one line each, from the start; --follow keeps printing new ones",
}

/** The longest event type (`session.thread_status_rescheduled`), so the summaries line up. */
const TYPE_WIDTH = 33

/** `troupe tail <session_id> [--follow]`: `<stored at>  <event id>  <type>  <summary>`, internal records left out. */
export async function tail(args: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(args, { follow: { type: 'boolean', short: 'f' } })
  if (positionals.length !== 1) throw new UsageError('name one session id: troupe tail sesn_… [--follow]')
  const sid = positionals[0]!
  // The id becomes a subject token: a dot or a wildcard in it would read other sessions.
  if (!isId('sesn', sid)) throw new UsageError(`${JSON.stringify(sid)} is not a session id (sesn_ followed by letters and digits)`)
  const conn = await io.connect()
  needJetStream(conn)
  const js = jetstream(conn.nc)
  if (!(await sessionExists(new Kvm(js), sid))) throw new Error(`no session ${sid} at ${conn.url} (deleted, or kept by another NATS?)`)

  const follow = values.follow === true
  const read = await readStream(js, {
    stream: EVENTS_STREAM,
    filter: eventsWildcard(sid),
    deliver: 'all',
    follow,
    signal: io.signal,
    caughtUp: () => follow && io.note(`following ${sid} at ${conn.url}; Ctrl-C to stop`),
  })
  if (!read) throw new Error(`no ${EVENTS_STREAM} stream at ${conn.url}: no troupe host has run against this NATS yet`)
  for await (const m of read) {
    const thread = threadOf(m.subject)
    // A message may hold several events (protocol/events.ts): a line each.
    for (const item of storedItems(m.headers, m.string(), m.seq)) {
      const type = item.type || '?'
      if (isInternalType(type)) continue
      let summary: string
      try {
        summary = summarize(JSON.parse(item.json))
      } catch {
        summary = item.json.slice(0, 120)
      }
      const cols = [m.time.toISOString(), item.id || '-', type.padEnd(TYPE_WIDTH), summary]
      if (thread !== 'primary') cols.splice(2, 0, `[${thread}]`)
      io.out(cols.join('  ').trimEnd())
    }
  }
}

async function sessionExists(kvm: Kvm, sid: string): Promise<boolean> {
  try {
    const e = await (await kvm.open(Buckets.sessions)).get(sessionKey(sid))
    return e?.operation === 'PUT'
  } catch (err) {
    // No sessions bucket: no session was ever created on this NATS.
    if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound) return false
    throw err
  }
}
