// The one classifier of NATS errors: which are the store being unavailable for a moment (503, retried at start-up),
// which are a lost compare-and-set, and which are neither (a bug: 500, never retried).
import t from 'tap'
import { connect, errors, NoRespondersError, PermissionViolationError, RequestError, TimeoutError } from '@nats-io/transport-node'
import { jetstream, JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream'
import { JetStreamStatusError, jserrors } from '@nats-io/jetstream/internal'
import { Kvm } from '@nats-io/kv'
import { isCasConflict, isOutcomeUnknown, isTransientNatsError, storeUnavailable } from '../../actors/kit/nats-errors.js'
import { retryWhileStarting } from '../../actors/kit/retry.js'
import { RecordStore } from '../../actors/kit/store.js'
import { startNats } from '../helpers/nats.js'

const apiError = (err_code: number, code = 503, description = 'x') => new JetStreamApiError({ err_code, code, description })
const noResponders = () => new RequestError('no responders', { cause: new NoRespondersError('$KV.b.k') })

t.test('transient: the store is unavailable for a moment', async (t) => {
  const cases: Array<[string, Error]> = [
    ['a request timeout', new TimeoutError()],
    ['a request timeout, wrapped by the request', new RequestError('timeout', { cause: new TimeoutError() })],
    ['no responders', noResponders()],
    ['no responders, bare', new NoRespondersError('$JS.API.INFO')],
    ['a request lost with the connection', new RequestError('connection disconnected')],
    ['jetstream not enabled (nats.js, from no responders)', new jserrors.JetStreamNotEnabled('jetstream is not enabled', { cause: noResponders() })],
    ['the connection closed', new errors.ClosedConnectionError()],
    ['the connection draining', new errors.DrainingConnectionError()],
    ['a connection failure', new errors.ConnectionError('connection refused')],
    ['a 503 status (direct get)', new JetStreamStatusError('no responders', 503)],
    ['a kv error we wrapped', new Error('agents bucket: timeout', { cause: new TimeoutError() })],
  ]
  // nats-server's error codes (server/errors.json), written out rather than read from the classifier under test.
  for (const [name, code] of [
    ['JSClusterIncompleteErr', 10004],
    ['JSClusterNotAvailErr', 10008],
    ['JSClusterNotLeaderErr', 10009],
    ['JSNotEnabledForAccountErr', 10039],
    ['JSRaftGeneralErrF', 10041],
    ['JSNotEnabledErr', 10076],
    ['JSStreamOfflineErr', 10118],
    ['JSConsumerOfflineErr', 10119],
    ['JSStreamExpectedLastSeqPerSubjectNotReady', 10163],
  ] as const)
    cases.push([`JetStream API ${name} (${code})`, apiError(code)])
  for (const [what, err] of cases) {
    t.ok(isTransientNatsError(err), what)
    const api = storeUnavailable(err)
    t.equal(api?.status, 503, `${what}: 503`)
    t.equal(api?.type, 'overloaded_error')
    t.ok((api?.retryAfterMs ?? 0) > 0, 'with retry-after-ms')
    t.match(api?.message, /store is temporarily unavailable/)
    t.notOk(isCasConflict(err), `${what} is no CAS conflict`)
  }
})

t.test('not transient: bugs, refusals of the request itself, and lost races', async (t) => {
  const cases: Array<[string, unknown]> = [
    ['a TypeError', new TypeError("Cannot read properties of undefined (reading 'x')")],
    ['a plain Error saying timeout', new Error('timeout while parsing')],
    ['a string', 'timeout'],
    ['undefined', undefined],
    ['a permission violation', new RequestError('permissions', { cause: new PermissionViolationError('denied', 'publish', '$JS.API.>') })],
    ['wrong last sequence', apiError(JetStreamApiCodes.StreamWrongLastSequence, 400)],
    ['stream not found', apiError(JetStreamApiCodes.StreamNotFound, 404)],
    ['replicas > 1 on a single server (10074)', apiError(10074, 500)],
    ['a 404 status', new JetStreamStatusError('message not found', 404)],
    ['a bug we wrapped', new Error('events stream: boom', { cause: new RangeError('boom') })],
  ]
  for (const [what, err] of cases) {
    t.notOk(isTransientNatsError(err), what)
    t.equal(storeUnavailable(err), undefined, `${what}: stays a 500`)
  }
  const cyclic = new Error('a') as Error & { cause?: unknown }
  cyclic.cause = cyclic
  t.notOk(isTransientNatsError(cyclic), 'a cause cycle ends')
})

t.test('an unknown outcome: only when the answer never came', async (t) => {
  t.ok(isOutcomeUnknown(new TimeoutError()), 'a timeout')
  t.ok(isOutcomeUnknown(new RequestError('timeout', { cause: new TimeoutError() })), 'a request timeout')
  t.ok(isOutcomeUnknown(new Error('agents bucket: timeout', { cause: new TimeoutError() })), 'a timeout we wrapped')
  t.ok(isOutcomeUnknown(new RequestError('connection disconnected')), 'the connection dropped while waiting')
  t.notOk(isOutcomeUnknown(noResponders()), 'no responders: not delivered')
  t.notOk(isOutcomeUnknown(new jserrors.JetStreamNotEnabled('jetstream is not enabled', { cause: noResponders() })), 'no responders, as nats.js reports it')
  t.notOk(isOutcomeUnknown(new errors.ClosedConnectionError()), 'a closed connection: never sent')
  t.notOk(isOutcomeUnknown(apiError(10008)), 'an API error (JSClusterNotAvailErr, 10008): refused')
  t.notOk(isOutcomeUnknown(new TypeError('x')), 'a bug')
})

t.test('CAS conflicts by API code, as a real nats-server answers them', async (t) => {
  t.ok(isCasConflict(apiError(JetStreamApiCodes.StreamWrongLastSequence, 400)), '10071')
  t.ok(isCasConflict(apiError(JetStreamApiCodes.StreamWrongLastSequenceUnknown, 400)), '10164')

  const nats = await startNats()
  t.teardown(() => nats.stop())
  const nc = await connect({ servers: nats.url })
  t.teardown(() => nc.close())
  const kv = await new Kvm(jetstream(nc)).create('cas', { history: 1 })
  const rev = await kv.create('k', new Uint8Array([1]))
  const created = await kv.create('k', new Uint8Array([2])).then(
    () => undefined,
    (e: unknown) => e,
  )
  t.ok(isCasConflict(created), `kv.create of an existing key: ${String(created)}`)
  t.notOk(isTransientNatsError(created))
  const updated = await kv.update('k', new Uint8Array([3]), rev + 5).then(
    () => undefined,
    (e: unknown) => e,
  )
  t.ok(isCasConflict(updated), `kv.update at a stale revision: ${String(updated)}`)
  const deleted = await kv.delete('k', { previousSeq: rev + 5 }).then(
    () => undefined,
    (e: unknown) => e,
  )
  t.ok(isCasConflict(deleted), `kv.delete at a stale revision: ${String(deleted)}`)

  const store = new RecordStore<{ n: number }>(kv)
  t.equal(await store.create('k', { n: 1 }), false, 'RecordStore.create: false for an existing key')
  t.equal(await store.update('k', { n: 1 }, rev + 5), false, 'RecordStore.update: false at a stale revision')
  t.equal(await store.delete('k', rev + 5), false, 'RecordStore.delete: false at a stale revision')

  // A publish nobody stores: no responders, which nats.js reports as JetStream not enabled.
  const none = await jetstream(nc)
    .publish('nobody.stores.this', new Uint8Array())
    .then(
      () => undefined,
      (e: unknown) => e,
    )
  t.ok(isTransientNatsError(none), `no stream for a subject: ${String(none)}`)
})

t.test('retryWhileStarting repeats transient failures only, and names what failed', async (t) => {
  let calls = 0
  const ok = await retryWhileStarting('flaky', async () => {
    if (++calls < 3) throw new jserrors.JetStreamNotEnabled('jetstream is not enabled', { cause: noResponders() })
    return 'up'
  })
  t.equal(ok, 'up')
  t.equal(calls, 3, 'retried twice')

  calls = 0
  const refused = apiError(10074, 500, 'replicas > 1 not supported in non-clustered mode')
  const err = await retryWhileStarting('bucket', async () => {
    calls++
    throw refused
  }).then(
    () => undefined,
    (e: Error) => e,
  )
  t.equal(calls, 1, 'a refusal is not retried')
  t.equal(err?.message, 'bucket: replicas > 1 not supported in non-clustered mode')
  t.equal(err?.cause, refused, 'the NATS error is the cause')

  calls = 0
  const late = await retryWhileStarting(
    'slow',
    async () => {
      calls++
      throw new TimeoutError()
    },
    { timeoutMs: 150 },
  ).then(
    () => undefined,
    (e: Error) => e,
  )
  t.ok(calls >= 2, 'retried until the deadline')
  t.match(late?.message, /^slow: /)
  t.type(late?.cause, TimeoutError)
})

t.test('retryWhileStarting waits for a stream just made to be known: "stream not found" is retried for a while', async (t) => {
  // A host opened a bucket, then watched it, on a cluster just formed: the server asked had not heard of it yet.
  let calls = 0
  const found = await retryWhileStarting('skill.* projection', async () => {
    if (++calls < 3) throw apiError(JetStreamApiCodes.StreamNotFound, 404, 'stream not found')
    return 'watching'
  })
  t.equal(found, 'watching')
  t.equal(calls, 3, 'retried twice')
})

t.test('retryWhileStarting waits out "no suitable peers" when a peer is offline, not when placement cannot be met', async (t) => {
  // Hosts started with their cluster: one server of three was still (re)starting when a bucket was made at R3.
  let calls = 0
  const made = await retryWhileStarting('troupe_hosts bucket', async () => {
    if (++calls < 3) throw apiError(10005, 400, 'no suitable peers for placement, peer offline')
    return 'made'
  })
  t.equal(made, 'made')
  t.equal(calls, 3, 'retried twice')
  calls = 0
  const err = await retryWhileStarting('bucket', async () => {
    calls++
    throw apiError(10005, 400, "no suitable peers for placement, tags not matched ['disk:ssd']")
  }).then(
    () => undefined,
    (e: Error) => e,
  )
  t.equal(calls, 1, 'a placement no server can meet is not retried')
  t.match(err?.message, /tags not matched/)
})
