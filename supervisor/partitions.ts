import type { KV } from '@nats-io/kv'
import type { Logger } from 'pino'
import { PARTITIONS } from '../protocol/subjects.js'
import { RecordStore } from '../actors/kit/store.js'
import { decode } from '../protocol/codec.js'

/**
 * Lease timing. A lease not renewed for LEASE_TTL_MS expires (the bucket's max age) and any host may claim
 * it: a SIGKILLed host's partitions move within TTL + one claim tick.
 */
export const LEASE_TTL_MS = 2500
export const RENEW_EVERY_MS = 600
export const CLAIM_EVERY_MS = 300
/** A host already at its fair share leaves a free partition this long to hosts below theirs. */
const YIELD_TO_UNDERSERVED_MS = 1000

interface Lease {
  host: string
  at: number
}

export interface PartitionEvents {
  gained(p: number): Promise<void>
  lost(p: number): Promise<void>
}

/**
 * Single activation by partition: a host serves partition p only while it holds the KV lease `<kind>.pNN`,
 * renewed with compare-and-set. A renewal that fails means someone else holds it now: stop at once.
 */
export class PartitionLeases {
  private readonly store: RecordStore<Lease>
  private readonly owned = new Map<number, number>() // partition → lease revision
  private readonly freeSince = new Map<number, number>()
  /** Last renewal we watched per partition; expiry leaves no marker, so age is the only sign of death. */
  private readonly heard = new Map<number, { host: string; at: number }>()
  private watcher?: { stop(): void }
  private timers: NodeJS.Timeout[] = []
  private stopped = false
  private busy = false

  constructor(
    private readonly kv: KV,
    private readonly kind: string,
    private readonly hostId: string,
    private readonly liveHosts: () => number,
    private readonly events: PartitionEvents,
    private readonly log: Logger,
  ) {
    this.store = new RecordStore<Lease>(kv)
  }

  private key = (p: number) => `${this.kind}.p${String(p).padStart(2, '0')}`

  async start(): Promise<void> {
    const w = await this.kv.watch({ key: `${this.kind}.>` })
    this.watcher = w
    void (async () => {
      for await (const e of w) {
        const p = Number(e.key.slice(this.kind.length + 2))
        if (e.operation === 'PUT') this.heard.set(p, { host: decode<Lease>(e.value).host, at: Date.now() })
        else this.heard.delete(p)
      }
    })()
    await this.claim()
    this.timers.push(setInterval(() => void this.renew(), RENEW_EVERY_MS))
    this.timers.push(setInterval(() => void this.claim(), CLAIM_EVERY_MS))
  }

  ownedPartitions(): number[] {
    return [...this.owned.keys()].sort((a, b) => a - b)
  }

  private fairShare(): number {
    return Math.ceil(PARTITIONS / Math.max(1, this.liveHosts()))
  }

  private async claim(): Promise<void> {
    if (this.stopped || this.busy) return
    this.busy = true
    try {
      const share = this.fairShare()
      for (let p = 0; p < PARTITIONS && !this.stopped; p++) {
        if (this.owned.has(p)) continue
        const h = this.heard.get(p)
        if (h && h.host !== this.hostId && Date.now() - h.at < LEASE_TTL_MS) continue
        const cur = await this.store.get(this.key(p))
        if (cur && cur.value.host !== this.hostId) {
          this.freeSince.delete(p)
          continue
        }
        // Every free partition must find an owner, but hosts below their share get the first chance.
        const since = this.freeSince.get(p) ?? Date.now()
        this.freeSince.set(p, since)
        if (this.owned.size >= share && Date.now() - since < YIELD_TO_UNDERSERVED_MS) continue
        const lease = { host: this.hostId, at: Date.now() }
        const rev = cur ? await this.store.update(this.key(p), lease, cur.revision) : await this.store.create(this.key(p), lease)
        if (rev === false) continue
        this.freeSince.delete(p)
        this.owned.set(p, rev)
        this.log.info({ partition: p, kind: this.kind }, 'partition acquired')
        await this.events.gained(p)
      }
      // More than our share (a host joined): hand one back per tick so load spreads without a stampede.
      if (this.owned.size > share && !this.stopped) await this.release(Math.max(...this.owned.keys()))
    } catch (err) {
      this.log.warn({ err }, 'partition claim failed')
    } finally {
      this.busy = false
    }
  }

  private async renew(): Promise<void> {
    for (const [p, rev] of [...this.owned]) {
      if (this.stopped) return
      try {
        const next = await this.store.update(this.key(p), { host: this.hostId, at: Date.now() }, rev)
        if (next === false) await this.lose(p, 'lease taken')
        else this.owned.set(p, next)
      } catch (err) {
        // NATS unreachable: we cannot prove we still own it once the TTL has passed.
        this.log.warn({ err, partition: p }, 'lease renewal failed')
      }
    }
  }

  private async lose(p: number, why: string): Promise<void> {
    if (!this.owned.delete(p)) return
    this.log.warn({ partition: p, kind: this.kind, why }, 'partition lost')
    await this.events.lost(p)
  }

  /** Gives a partition back: stop serving first, then delete the lease so another host can claim it at once. */
  async release(p: number): Promise<void> {
    const rev = this.owned.get(p)
    if (rev === undefined) return
    this.owned.delete(p)
    await this.events.lost(p)
    await this.store.delete(this.key(p), rev).catch(() => false)
    this.log.info({ partition: p, kind: this.kind }, 'partition released')
  }

  /** Stops renewing without releasing: what a crash looks like to the other hosts (tests). */
  halt(): void {
    this.stopped = true
    this.watcher?.stop()
    for (const t of this.timers) clearInterval(t)
  }

  async stop(): Promise<void> {
    this.stopped = true
    this.watcher?.stop()
    for (const t of this.timers) clearInterval(t)
    for (const p of [...this.owned.keys()]) await this.release(p)
  }
}
