import type { Page } from '../page.js'
import { type Dream, DreamCreate, DreamHoldingInput, DreamListQuery } from '../schemas/dream.js'
import { defineKind, returns } from './define.js'

/**
 * Dreams. Everything about one dream goes to the host owning its partition (a create mints the id that picks it), where
 * it is a durable-state actor whose work starts its session, follows it to its end and lets go of the store it held;
 * lists span every partition, so any host answers them from its projection.
 */
export const DreamKind = defineKind(
  'dream',
  { param: 'dream_id', prefix: 'drm', noun: 'Dream' },
  {
    create: { placement: 'owner', mint: true, body: DreamCreate, reply: returns<Dream>() },
    list: { placement: 'any', query: DreamListQuery, reply: returns<Page<Dream>>() },
    get: { placement: 'owner', reply: returns<Dream>() },
    archive: { placement: 'owner', reply: returns<Dream>() },
    cancel: { placement: 'owner', reply: returns<Dream>() },
    /** Internal (a memory store's owner): whether this dream still holds the store (false once it let go or never was). */
    holding: { placement: 'owner', body: DreamHoldingInput, reply: returns<{ holding: boolean }>() },
  },
)
