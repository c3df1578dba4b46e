import { performance } from 'node:perf_hooks'
import type { KV, KvWatchEntry } from '@nats-io/kv'
import type { QueuedIterator } from '@nats-io/nats-core'
import type { Logger } from 'pino'
import { decode, encode } from '../../protocol/codec.js'
import { fnv1a } from '../../protocol/hash.js'
import { every, type Loop } from './loop.js'
import { retryWhileStarting } from './retry.js'

export interface RosterOptions<T> {
  /** Keys of the roster's members: `<prefix><member id>`, one each. */
  prefix: string
  /** How often a member writes its key (real ms). */
  beatMs: number
  /** A member not heard for this long (real ms) is not live; the bucket's max age should be no shorter. */
  ttlMs: number
  /** This process as a member, with what it says of itself at each beat; absent for a process that only looks. */
  self?: { id: string; value: () => T }
  log: Logger
}

/**
 * Processes of one role that run now, each a heartbeat key in a bucket whose max age is the TTL, and which of them a
 * key prefers: rendezvous hashing over the live ones, so every process names the same one from the same set, and one
 * leaving moves only its own share. A member is live while its beat was heard here within the TTL (a key that ages
 * out of the bucket sends no notice to watchers). Schedulers share occurrences this way; hosts of sessions bind their
 * sessions to sandbox hosts.
 */
export class Roster<T> {
  private readonly heard = new Map<string, { at: number; value: T }>()
  private watcher?: QueuedIterator<KvWatchEntry>
  private beat?: Loop

  constructor(
    private readonly kv: KV,
    private readonly o: RosterOptions<T>,
  ) {}

  get self(): string | undefined {
    return this.o.self?.id
  }

  async start(): Promise<void> {
    const { prefix, self, log } = this.o
    this.watcher = await retryWhileStarting(`${prefix} roster watch`, () => this.kv.watch({ key: `${prefix}>` }), { log })
    void (async () => {
      for await (const e of this.watcher!) {
        const id = e.key.slice(prefix.length)
        if (e.operation !== 'PUT') {
          this.heard.delete(id)
          continue
        }
        try {
          this.heard.set(id, { at: performance.now(), value: decode<T>(e.value) })
        } catch (err) {
          log.warn({ err, key: e.key }, 'a roster entry that cannot be read is left out')
        }
      }
    })()
    if (!self) return
    this.beat = every(
      this.o.beatMs,
      () => this.kv.put(`${prefix}${self.id}`, encode(self.value())).then(() => undefined),
      (err) => log.warn({ err, roster: prefix }, 'roster heartbeat failed'),
    )
  }

  /** The live members, this one (when a member) always included. */
  live(): string[] {
    const cutoff = performance.now() - this.o.ttlMs
    const self = this.o.self?.id
    const out = self ? [self] : []
    for (const [id, h] of this.heard) if (id !== self && h.at >= cutoff) out.push(id)
    return out
  }

  /** What a live member said of itself at its last beat heard here. */
  value(id: string): T | undefined {
    if (id === this.o.self?.id) return this.o.self.value()
    const h = this.heard.get(id)
    return h && h.at >= performance.now() - this.o.ttlMs ? h.value : undefined
  }

  /** The live member `key` prefers among those `fit` keeps; undefined when none is. */
  preferred(key: string, fit: (id: string) => boolean = () => true): string | undefined {
    let best: string | undefined
    let score = -1
    for (const id of this.live()) {
      if (!fit(id)) continue
      const s = mixed(fnv1a(`${id}/${key}`))
      if (s > score || (s === score && best !== undefined && id < best)) [best, score] = [id, s]
    }
    return best
  }

  async stop(): Promise<void> {
    await this.beat?.stop()
    this.watcher?.stop()
    // Leaving at once rather than after the TTL: the others take this one's share without waiting for a grace.
    const self = this.o.self?.id
    if (self) await this.kv.delete(`${this.o.prefix}${self}`).catch(() => undefined)
  }
}

/**
 * MurmurHash3's finalizer over an FNV-1a hash: FNV-1a's last bytes barely reach its high bits, so scores of keys that
 * differ only at their end, compared across members, were biased (one of three schedulers preferred 19% of claims, not
 * a third); mixed, each bit depends on every input bit.
 */
function mixed(h: number): number {
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  h ^= h >>> 16
  return h >>> 0
}
