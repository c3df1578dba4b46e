import { fail } from '../../protocol/errors/fail.js'
import { DreamKind } from '../../protocol/ops/dream.js'
import type { Dream } from '../../protocol/schemas/dream.js'
import { Buckets } from '../../protocol/subjects.js'
import { fileBytes } from '../file/index.js'
import { type ActorKindDef, listedKind } from '../kit/index.js'
import { dreamOps } from './behaviour.js'
import { DreamRunner } from './runner.js'
import { DREAM_PREFIX, type DreamState, EMPTY } from './state.js'

/**
 * Dreams (issue 42 point 5; the official client's `beta.dreams`): each a durable-state actor on the owner of its
 * partition, its create included (the store's hold and the dream's first state decided there), lists from a projection
 * of the bucket on any host. A dream runs as a session of its own, which its work starts, follows and stops
 * (runner.ts): the input store mounted read-only, the input sessions' transcripts as read-only files, the output store
 * read-write.
 */
export const dreamKind: ActorKindDef = {
  contract: DreamKind,
  start(ctx) {
    const runner = new DreamRunner({ client: ctx.client, files: fileBytes(ctx.js) })
    return listedKind({
      contract: DreamKind,
      bucket: Buckets.dreams,
      missing: (id) => fail('dream_not_found', id),
      initial: () => EMPTY,
      prefix: DREAM_PREFIX,
      // An id a create never stored has the empty state: not listed.
      view: (s: DreamState) => s.dream as Dream,
      work: () => runner.work(),
      ops: (_, states, projection) => dreamOps({ client: ctx.client, states, projection, runner }),
    }).start(ctx)
  },
}
