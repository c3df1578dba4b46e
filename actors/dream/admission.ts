import { fail, inField } from '../../protocol/errors/fail.js'
import { MemoryStoreKind } from '../../protocol/ops/memory.js'
import { SessionKind } from '../../protocol/ops/session.js'
import type { DreamCreateInput, DreamInput } from '../../protocol/schemas/dream.js'
import type { ActorClient } from '../kit/index.js'

/** How many input sessions are asked about at once. */
const AT_ONCE = 8

/**
 * What a create names, checked before anything is stored: the memory store exists and is not archived (404 or 400
 * naming `inputs[i].memory_store_id`), and every session exists (404 naming `inputs[i].session_ids[j]`).
 */
export async function checkInputs(client: ActorClient, b: DreamCreateInput, rid: string): Promise<void> {
  for (const [i, input] of (b.inputs as DreamInput[]).entries()) {
    if (input.type === 'memory_store') {
      const field = `inputs[${i}].memory_store_id`
      const store = await client.call(MemoryStoreKind.ops.get, { id: input.memory_store_id, rid }).catch(inField(field))
      if (store.archived_at) throw fail('dream_input_archived', field, store.id)
      continue
    }
    const ids = input.session_ids
    for (let j = 0; j < ids.length; j += AT_ONCE) {
      await Promise.all(
        ids.slice(j, j + AT_ONCE).map((id, k) => client.call(SessionKind.ops.get, { id, rid }).catch(inField(`inputs[${i}].session_ids[${j + k}]`))),
      )
    }
  }
}
