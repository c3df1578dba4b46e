import t from 'tap'
import { JetStreamApiError, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream'
import { pino } from 'pino'
import { ensureEventsStream, lastSequence, readSession } from '../../actors/session/log/log.js'
import { isApiError } from '../../protocol/errors/api-error.js'
import { toEnvelope } from '../../protocol/errors/envelope.js'
import { EVENTS_STREAM, eventsSubject } from '../../protocol/subjects.js'
import { natsWithClient } from '../helpers/nats.js'

// A replay reads a whole history through a consumer; when none can be created (no meta leader in an election),
// it reads the rest with direct gets, which any replica answers. Either way it yields every record, in order.

const { js, jsm } = await natsWithClient(t)
await ensureEventsStream({ jsm, replicas: 1, log: pino({ level: 'silent' }) })

// Two sessions interleaved, so each read must skip the other's records.
const RECORDS = 150
for (let i = 0; i < RECORDS; i++) {
  await js.publish(eventsSubject('sesn_replay1'), JSON.stringify({ type: 'agent.message', n: i }))
  await js.publish(eventsSubject('sesn_other1'), JSON.stringify({ type: 'agent.message', n: -i }))
}

/** `js` whose consumer creation fails with `err`, and counts the direct gets it answers. */
function failingConsumers(err: Error) {
  const seen = { directGets: 0 }
  const wrap = (m: JetStreamManager): JetStreamManager =>
    new Proxy(m, {
      get(target, prop) {
        if (prop === 'consumers') return { ...target.consumers, add: () => Promise.reject(err) }
        if (prop === 'direct')
          return {
            getMessage: (...args: Parameters<JetStreamManager['direct']['getMessage']>) => {
              seen.directGets++
              return target.direct.getMessage(...args)
            },
          }
        return Reflect.get(target, prop)
      },
    })
  const client = new Proxy(js, {
    get(target, prop) {
      if (prop === 'jetstreamManager') return async (check?: boolean) => wrap(await target.jetstreamManager(check))
      return Reflect.get(target, prop)
    },
  }) as JetStreamClient
  return { client, seen }
}

const replay = async (client: JetStreamClient) => {
  const seen: number[] = []
  await readSession(client, 'sesn_replay1', await lastSequence(jsm, 'sesn_replay1'), (r) => seen.push((r.event as any).n))
  return seen
}
const all = Array.from({ length: RECORDS }, (_, i) => i)

t.test('through a consumer: every record once, in order', async (t) => {
  t.same(await replay(js), all)
})

t.test('no consumer can be created for the moment: direct gets read every record', async (t) => {
  const { client, seen } = failingConsumers(new JetStreamApiError({ code: 503, err_code: 10008, description: 'JetStream system temporarily unavailable' }))
  t.same(await replay(client), all)
  t.ok(seen.directGets >= RECORDS, `${seen.directGets} direct gets`)
})

t.test('a consumer refused for another reason fails the replay', async (t) => {
  const { client } = failingConsumers(new Error('a bug'))
  await t.rejects(replay(client), /a bug/)
})

t.test('a read that ends before the sequence it must reach fails, retryably: 503 history_behind', async (t) => {
  // What a replica behind presents, or a purge landing between the replay's two steps: the last stored sequence is
  // read first, then the records up to it. Here the two steps are taken apart and the newest record is deleted
  // between them, on the real server.
  const sid = 'sesn_behind1'
  // Five in a row: the record before the newest is at sequence until − 1.
  for (let i = 0; i < 5; i++) await js.publish(eventsSubject(sid), JSON.stringify({ type: 'agent.message', n: i }))
  const until = await lastSequence(jsm, sid)
  await jsm.streams.deleteMessage(EVENTS_STREAM, until)
  const seen: number[] = []
  const err = await readSession(js, sid, until, (r) => seen.push((r.event as any).n)).then(
    () => undefined,
    (e: unknown) => e,
  )
  t.same(seen, [0, 1, 2, 3], 'every record there was, in order')
  t.ok(isApiError(err), String(err))
  t.same(toEnvelope(err, 'req_1'), {
    status: 503,
    headers: { 'retry-after-ms': '500' },
    body: {
      type: 'error',
      error: { type: 'overloaded_error', message: `The history of session ${sid} was read up to ${until - 1} of ${until} (a replica behind); retry shortly` },
      request_id: 'req_1',
    },
  })
})
