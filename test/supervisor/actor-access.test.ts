import t from 'tap'
import { connect } from '@nats-io/transport-node'
import { actorAccess } from '../../supervisor/actor-access.js'
import { startNats } from '../helpers/nats.js'

// The session kind's reader as the gateway gets it: a read the store cannot serve for the moment fails with a
// retryable 503 the gateway answers as it is (an SSE stream's open, or its error event), not a 500.

t.test('a history read on a connection that is gone: 503 store_unavailable', async (t) => {
  const nats = await startNats()
  t.teardown(() => nats.stop())
  const nc = await connect({ servers: nats.url })
  const access = actorAccess(nc)
  await nc.close()
  await t.rejects(access.readHistory('sesn_01M8FDS8KM24N0JRSSWN11BWX5', 'all'), {
    name: 'ApiError',
    status: 503,
    message: 'The store is temporarily unavailable (NATS JetStream); retry shortly',
  })
})
