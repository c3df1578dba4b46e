import { buildRaw } from './raw-http.js'
import { buildHttp } from './requests.js'
import { deriveSeed, Rng } from './rng.js'
import { CLASSES, type ClassName, type Spec, type Victims } from './types.js'

/** How often each class comes up, relative to the others. Big bodies are counted out separately. */
const WEIGHTS: Record<Exclude<ClassName, 'big-body'>, number> = {
  'malformed-json': 10,
  'deep-json': 8,
  'wrong-type': 20,
  'array-for-object': 8,
  'hostile-path-id': 14,
  'hostile-body-id': 10,
  'hostile-query': 14,
  'odd-method': 8,
  'raw-http': 12,
  'hostile-header': 10,
}

/** Big bodies cost seconds each: a handful per run, however long. */
const bigBodies = (requests: number) => (requests < 50 ? 0 : Math.min(6, Math.max(1, Math.round(requests / 400))))

export interface Slot {
  class: ClassName
  /** Which occurrence of its class this is: targets and raw cases rotate on it. */
  occurrence: number
}

/**
 * The class of every request, a pure function of (seed, requests): every class at least once when there is
 * room, the rest by weight, shuffled. Each request is then built from its own (seed, index) stream, so
 * `--only i` rebuilds request i exactly without building the others.
 */
export function schedule(seed: number, requests: number): Slot[] {
  const rng = new Rng(deriveSeed(seed, 'schedule'))
  const classes: ClassName[] = []
  for (let i = 0; i < bigBodies(requests); i++) classes.push('big-body')
  if (requests >= CLASSES.length) for (const c of CLASSES) if (c !== 'big-body') classes.push(c)
  const weighted = Object.entries(WEIGHTS) as Array<[ClassName, number]>
  while (classes.length < requests) classes.push(rng.weighted(weighted))
  rng.shuffle(classes)
  const seen = new Map<ClassName, number>()
  return classes.slice(0, requests).map((c) => {
    const occurrence = seen.get(c) ?? 0
    seen.set(c, occurrence + 1)
    return { class: c, occurrence }
  })
}

export function buildSpec(seed: number, index: number, slot: Slot, victims: Victims): Spec {
  const rng = new Rng(deriveSeed(seed, 'request', index))
  return slot.class === 'raw-http' ? buildRaw(rng, slot.occurrence, victims) : buildHttp(slot.class, rng, slot.occurrence, victims)
}
