import { performance } from 'node:perf_hooks'
import type { KV, KvWatchEntry } from '@nats-io/kv'
import type { QueuedIterator } from '@nats-io/nats-core'
import type { Logger } from 'pino'
import { encode } from '../../../protocol/codec.js'
import { fnv1a } from '../../../protocol/hash.js'
import { every, type Loop } from '../../kit/loop.js'

/** How often a scheduler says it is alive (real ms). */
export const ORCHESTRATOR_BEAT_MS = 1000
/** A scheduler not heard for this long (real ms) is left out of the split; also the bucket's max age. */
export const ORCHESTRATOR_TTL_MS = 3000

const PREFIX = 'orch.'

/**
 * The schedulers that run now (`troupe_orchestrators`, one heartbeat key each) and which of them an occurrence
 * prefers: rendezvous hashing of the claim key over the live ones, so every scheduler names the same one from the same
 * set, and one leaving moves only its own share. A scheduler is live while its beat was heard here within the TTL
 * (a key that ages out of the bucket sends no notice to watchers).
 */
export class Roster {
  private readonly heard = new Map<string, number>()
  private watcher?: QueuedIterator<KvWatchEntry>
  private beat?: Loop

  constructor(
    private readonly kv: KV,
    readonly self: string,
    private readonly log: Logger,
  ) {}

  async start(): Promise<void> {
    this.watcher = await this.kv.watch({ key: `${PREFIX}>` })
    void (async () => {
      for await (const e of this.watcher!) {
        const id = e.key.slice(PREFIX.length)
        if (e.operation === 'PUT') this.heard.set(id, performance.now())
        else this.heard.delete(id)
      }
    })()
    this.beat = every(
      ORCHESTRATOR_BEAT_MS,
      () => this.kv.put(`${PREFIX}${this.self}`, encode({ at: Date.now() })).then(() => undefined),
      (err) => this.log.warn({ err }, 'scheduler heartbeat failed'),
    )
  }

  /** The live schedulers, this one always included. */
  live(): string[] {
    const cutoff = performance.now() - ORCHESTRATOR_TTL_MS
    const out = [this.self]
    for (const [id, at] of this.heard) if (id !== this.self && at >= cutoff) out.push(id)
    return out
  }

  /** The live scheduler an occurrence's claim key prefers. */
  preferred(key: string): string {
    let best = this.self
    let score = -1
    for (const id of this.live()) {
      const s = fnv1a(`${id}/${key}`)
      if (s > score || (s === score && id < best)) [best, score] = [id, s]
    }
    return best
  }

  async stop(): Promise<void> {
    await this.beat?.stop()
    this.watcher?.stop()
    // Leaving at once rather than after the TTL: the others take this one's share without waiting for a grace.
    await this.kv.delete(`${PREFIX}${this.self}`).catch(() => undefined)
  }
}
