import type { KV, KvWatchEntry } from '@nats-io/kv'
import type { QueuedIterator } from '@nats-io/nats-core'
import type { Clock } from '../../../protocol/clock.js'
import { decode, encode } from '../../../protocol/codec.js'
import type { FireReply } from '../../../protocol/ops/deployment.js'
import { casLoop, isCasConflict, LOST, retryWhileStarting } from '../../kit/index.js'

/**
 * `claim.<deployment id>.<occurrence ms>` in `troupe_schedule_claims`: who fires one occurrence, until when (clock ms),
 * or that it is done (the fire answered). The claim only keeps schedulers from doing the work twice and lets one take
 * over from a dead holder; what makes a fire repeated after a takeover harmless is the deployment's own
 * `last_scheduled_at` (its `fire` answers `duplicate`).
 */
export type ClaimValue = { holder: string; until: number } | { done: FireReply['outcome'] }

/** What claiming found: it is ours now (until `until`), someone else holds it until `until`, or it is done. */
export type Claim = { kind: 'mine'; until: number } | { kind: 'held'; until: number } | { kind: 'done' }

/** Claims outlive what needs them by far (an occurrence is done within seconds, or taken over after a lease). */
export const CLAIM_MAX_AGE_MS = 10 * 60_000

const PREFIX = 'claim.'

export const claimKey = (deploymentId: string, at: number) => `${PREFIX}${deploymentId}.${at}`

/** The deployment and occurrence of a claim key; undefined for any other key. */
export function parseClaimKey(key: string): { id: string; at: number } | undefined {
  if (!key.startsWith(PREFIX)) return undefined
  const dot = key.lastIndexOf('.')
  const at = Number(key.slice(dot + 1))
  return dot > PREFIX.length && Number.isSafeInteger(at) ? { id: key.slice(PREFIX.length, dot), at } : undefined
}

export class Claims {
  private watcher?: QueuedIterator<KvWatchEntry>

  constructor(
    private readonly kv: KV,
    /** This scheduler's id, the holder it writes. */
    private readonly self: string,
    private readonly clock: Clock,
    /** How long a lease lasts, in clock ms. */
    private readonly leaseMs: number,
  ) {}

  /**
   * Claims an occurrence: a KV create when nobody has; compare-and-set at the revision read when the lease there is
   * this scheduler's own (renewed) or has expired (taken over). One round trip when uncontended.
   */
  claim(id: string, at: number): Promise<Claim> {
    const key = claimKey(id, at)
    return casLoop(async () => {
      const until = this.clock() + this.leaseMs
      const value = encode({ holder: this.self, until } satisfies ClaimValue)
      try {
        await this.kv.create(key, value)
        return { kind: 'mine', until } as const
      } catch (err) {
        if (!isCasConflict(err)) throw err
      }
      const seen = await this.kv.get(key)
      // Gone between the create and the read (aged out, deleted): create again.
      if (seen?.operation !== 'PUT') return LOST
      const v = decode<ClaimValue>(seen.value)
      if ('done' in v) return { kind: 'done' } as const
      if (v.holder !== this.self && v.until > this.clock()) return { kind: 'held', until: v.until } as const
      try {
        await this.kv.update(key, value, seen.revision)
        return { kind: 'mine', until } as const
      } catch (err) {
        if (isCasConflict(err)) return LOST
        throw err
      }
    })
  }

  /** The occurrence is done: nobody needs to fire it again. */
  async done(id: string, at: number, outcome: FireReply['outcome']): Promise<void> {
    await this.kv.put(claimKey(id, at), encode({ done: outcome } satisfies ClaimValue))
  }

  /**
   * Calls `onDone` for every occurrence marked done from now on, by any scheduler: the others then drop it without a
   * claim of their own. Only updates: a scheduler that starts knows nothing in flight, and a claim finds what is done.
   */
  async watchDone(onDone: (id: string, at: number) => void): Promise<void> {
    this.watcher = await retryWhileStarting('schedule claims watch', () => this.kv.watch({ key: `${PREFIX}>`, include: 'updates' }))
    void (async () => {
      for await (const e of this.watcher!) {
        if (e.operation !== 'PUT') continue
        const k = parseClaimKey(e.key)
        if (k && 'done' in decode<ClaimValue>(e.value)) onDone(k.id, k.at)
      }
    })()
  }

  stop(): void {
    this.watcher?.stop()
  }
}
