import type { KV, KvWatchEntry } from '@nats-io/kv'
import type { QueuedIterator } from '@nats-io/nats-core'
import { decode } from '../../../protocol/codec.js'
import { SESSION_PREFIX, type SessionRecord } from './state.js'

/**
 * The running sessions of each API key (the key that created them, `SessionRecord.api_key_id`), from a watch of the
 * sessions' records: what a gateway checks a key's `concurrent_sessions` against with no NATS round trip. A record
 * says running once its turn has run `TROUPE_SESSION_RUNNING_RECORD_MS` (200 ms by default), and the watch delivers
 * it milliseconds later: a key starting sessions faster than that may pass its limit by the ones it starts meanwhile.
 * Started on first use, so a host whose keys are off never watches.
 */
export class RunningByKey {
  private readonly keyOf = new Map<string, string>()
  private readonly counts = new Map<string, number>()
  private watcher?: Promise<QueuedIterator<KvWatchEntry>>

  constructor(private readonly kv: () => Promise<KV>) {}

  /** Sessions `keyId` made that are running now. */
  count(keyId: string): number {
    this.start()
    return this.counts.get(keyId) ?? 0
  }

  /** Whether the session is running now (counted in its key's sessions). */
  running(sessionId: string): boolean {
    return this.keyOf.has(sessionId)
  }

  private start(): void {
    if (this.watcher) return
    this.watcher = this.kv().then((kv) => kv.watch({ key: `${SESSION_PREFIX}>` }))
    void this.watcher
      .then(async (w) => {
        for await (const e of w) this.apply(e)
      })
      // A watch that cannot start is tried again on the next check.
      .catch(() => (this.watcher = undefined))
  }

  private apply(e: KvWatchEntry): void {
    const id = e.key.slice(SESSION_PREFIX.length)
    const was = this.keyOf.get(id)
    let now: string | undefined
    if (e.operation === 'PUT') {
      const r = decode<SessionRecord>(e.value)
      if (r.api_key_id && r.session.status === 'running') now = r.api_key_id
    }
    if (was === now) return
    if (was !== undefined) {
      this.keyOf.delete(id)
      const n = (this.counts.get(was) ?? 1) - 1
      if (n > 0) this.counts.set(was, n)
      else this.counts.delete(was)
    }
    if (now !== undefined) {
      this.keyOf.set(id, now)
      this.counts.set(now, (this.counts.get(now) ?? 0) + 1)
    }
  }

  stop(): void {
    void this.watcher?.then((w) => w.stop()).catch(() => undefined)
  }
}
