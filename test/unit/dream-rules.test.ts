import t from 'tap'
import { DreamCreate } from '../../protocol/schemas/dream.js'
import { parse } from '../../protocol/validate.js'
import { transcriptFiles } from '../../actors/dream/transcripts.js'

/** A dream create's shape rules (protocol/schemas/dream.ts), and how transcripts share files past a session's 100 resources. */

const message = (body: unknown): string => {
  try {
    parse(DreamCreate, body)
  } catch (err) {
    return (err as Error).message
  }
  return 'accepted'
}

t.test('the shapes a create takes', async (t) => {
  const store = { type: 'memory_store', memory_store_id: 'memstore_1' }
  const sessions = { type: 'sessions', session_ids: ['sesn_2', 'sesn_1'] }
  t.equal(message({ inputs: [store], model: 'm' }), 'accepted')
  t.equal(message({ inputs: [sessions, store], model: { id: 'm', speed: 'standard' }, instructions: 'x' }), 'accepted')
  t.equal(message({ inputs: [store], model: 'm', output_behavior: { type: 'update_existing', memory_store_id: 'memstore_1' } }), 'accepted')
  t.match(message({ inputs: [store, store], model: 'm' }), /^inputs\[1\] must not repeat a memory_store entry/)
  t.match(message({ inputs: [{ ...sessions, session_ids: ['sesn_1', 'sesn_1'] }], model: 'm' }), /^inputs\[0\]\.session_ids\[1\] must not repeat sesn_1/)
  t.match(message({ inputs: [store], model: { id: 'm', speed: 'fast' } }), /model\.speed must be "standard"/)
  t.match(
    message({ inputs: [sessions], model: 'm', output_behavior: { type: 'update_existing', memory_store_id: 'memstore_1' } }),
    /^output_behavior\.memory_store_id needs a memory_store entry/,
  )
  t.match(
    message({ inputs: [store], model: 'm', output_behavior: { type: 'update_existing', memory_store_id: 'memstore_2' } }),
    /^output_behavior\.memory_store_id must be the memory store/,
  )
  t.match(message({ inputs: [{ type: 'file' }], model: 'm' }), /^inputs\[0\]\.type must be "memory_store" or "sessions"/)
})

t.test('transcripts: one file a session while they fit, shared out in order past that', async (t) => {
  const ids = Array.from({ length: 100 }, (_, i) => `sesn_${String(i).padStart(3, '0')}`)
  t.same(
    transcriptFiles(ids.slice(0, 3), 98).map((f) => f.name),
    ids.slice(0, 3),
  )
  const shared = transcriptFiles(ids, 98)
  t.ok(shared.length <= 98, `${shared.length} files`)
  t.same(
    shared.flatMap((f) => f.sessions),
    ids,
    'every session once, in order',
  )
})
