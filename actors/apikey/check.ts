import type { KV, KvWatchEntry } from '@nats-io/kv'
import type { QueuedIterator } from '@nats-io/nats-core'
import { decode } from '../../protocol/codec.js'
import type { CallerKey } from '../../protocol/schemas/api-key.js'
import { retryWhileStarting, type StartupLog } from '../kit/index.js'
import { callerOf, hashOf, KEY_PREFIX, type StoredKey } from './records.js'

/** Presented keys remembered with their hash (default): past it the oldest is forgotten, so a flood of forged keys costs memory once. */
export const MEMO_ENTRIES = 4096
/** Longer than any key: never hashed, never remembered. */
const MAX_PRESENTED = 512

/**
 * Every host's copy of the API keys, kept by watching their bucket (a revoke or rotate reaches it in milliseconds) and
 * checked with no NATS round trip. A presented key is looked up by its HMAC with the cluster's key, remembered per
 * presented string in a bounded map, so the hot path is two Map lookups and no allocation. Timing reveals nothing of a
 * stored key: the lookup is on a keyed hash an attacker cannot steer (a guess's hash is unrelated to how near it is),
 * which is the constant-time comparison that matters here.
 */
export class KeyCheck {
  private readonly byHash = new Map<string, CallerKey>()
  private readonly hashOfId = new Map<string, string>()
  private readonly memo = new Map<string, string>()
  private seen = 0
  private waiters: Array<{ seq: number; resolve: () => void }> = []
  private watcher?: QueuedIterator<KvWatchEntry>

  constructor(
    private readonly kv: KV,
    private readonly clusterKey: Uint8Array,
    private readonly memoEntries = MEMO_ENTRIES,
  ) {}

  /** Watches the bucket and resolves once every key stored before the call is in the copy. */
  async start(log?: StartupLog): Promise<void> {
    this.watcher = await retryWhileStarting('API keys watch', () => this.kv.watch({ key: '>' }), { log })
    void (async () => {
      for await (const e of this.watcher!) this.apply(e)
    })()
    await retryWhileStarting('API keys watch', () => this.fresh(), { log })
  }

  /** How many keys exist, revoked and expired ones included: once one does, a server stays protected. */
  get count(): number {
    return this.hashOfId.size
  }

  /** The key `presented` is, live or not (revoked, expired: the caller tells them apart); undefined when none is. */
  lookup(presented: string): CallerKey | undefined {
    let hash = this.memo.get(presented)
    if (hash === undefined) {
      if (presented.length > MAX_PRESENTED) return undefined
      hash = hashOf(this.clusterKey, presented)
      if (this.memo.size >= this.memoEntries) this.memo.delete(this.memo.keys().next().value!)
      this.memo.set(presented, hash)
    }
    return this.byHash.get(hash)
  }

  private apply(e: KvWatchEntry): void {
    if (e.key.startsWith(KEY_PREFIX)) {
      const id = e.key.slice(KEY_PREFIX.length)
      const old = this.hashOfId.get(id)
      if (old !== undefined) this.byHash.delete(old)
      this.hashOfId.delete(id)
      if (e.operation === 'PUT') {
        const stored = decode<StoredKey>(e.value)
        this.hashOfId.set(id, stored.hash)
        this.byHash.set(stored.hash, callerOf(stored.key))
      }
    }
    if (e.revision > this.seen) this.seen = e.revision
    if (this.waiters.length) {
      const due = this.waiters.filter((w) => w.seq <= this.seen)
      this.waiters = this.waiters.filter((w) => w.seq > this.seen)
      for (const w of due) w.resolve()
    }
  }

  private async fresh(): Promise<void> {
    const last = (await this.kv.status()).streamInfo.state.last_seq
    if (last <= this.seen) return
    await new Promise<void>((resolve) => this.waiters.push({ seq: last, resolve }))
  }

  stop(): void {
    this.watcher?.stop()
  }
}
