import type { RequestTag } from '../../../protocol/events.js'

/** How many requests per session are remembered for retries: far more than a client retries at once. */
export const REMEMBERED_REQUESTS = 1000

/** A POST whose client events are (partly) stored: the ids of those stored so far, by place in the request. */
export interface StoredRequest {
  hash: string
  ids: Array<string | undefined>
}

/**
 * The last REMEMBERED_REQUESTS POSTs that stored client events in one session, by key, rebuilt from the
 * `Troupe-Request` headers on replay: a retry (same Idempotency-Key, or an internal re-send of the same request
 * id) is answered with what was stored, and stores only what is missing.
 */
export class RequestLog {
  private readonly byKey = new Map<string, StoredRequest>()

  get(key: string): StoredRequest | undefined {
    return this.byKey.get(key)
  }

  /** One client event of the request `tag` names is stored, as `id`. */
  note(tag: RequestTag, id: string): void {
    let r = this.byKey.get(tag.key)
    if (!r || r.hash !== tag.hash) {
      r = { hash: tag.hash, ids: new Array<string | undefined>(tag.count).fill(undefined) }
      this.byKey.delete(tag.key)
      this.byKey.set(tag.key, r)
      // Maps iterate in insertion order: the first key is the oldest request.
      if (this.byKey.size > REMEMBERED_REQUESTS) this.byKey.delete(this.byKey.keys().next().value!)
    }
    r.ids[tag.index] = id
  }
}
