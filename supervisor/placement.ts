import { performance } from 'node:perf_hooks'
import type { KV, KvWatchEntry } from '@nats-io/kv'
import type { Logger } from 'pino'
import { decode, encode } from '../protocol/codec.js'
import { fnv1a } from '../protocol/hash.js'
import { PARTITIONS, partitionToken, type HostAbilities, type HostBeat, type KindName, type PlacementRecord } from '../protocol/subjects.js'
import { every, isCasConflict, live, type Loop, readAtLeader, RecordStore, retryWhileStarting } from '../actors/kit/index.js'
import { ownersFor } from './cluster-config.js'
import { type LoopDelay, loopDelayWatch } from './loop-delay.js'
import type { Presence } from './presence.js'

/**
 * Liveness timing. A host's heartbeat key expires `ttlMs` after its last write (the hosts bucket's max age, HOST_TTL_MS
 * for a bucket created now); only then, or once its NATS connection is gone, may another host take its partitions.
 * The host itself stops serving SERVE_MARGIN_MS before its key could expire, measured on its monotonic clock from when
 * it *sent* its last acknowledged beat, and after any reconnect, until it has claimed its partitions again.
 */
export const HOST_TTL_MS = 2000
export const BEAT_EVERY_MS = 500
export const SERVE_MARGIN_MS = 500
/** How often a host compares what it holds with what the live host set says it should hold. */
export const TICK_MS = 250
/**
 * A holder not heard for this long is looked at: when its NATS connection is gone, it is dead (see Presence). Two
 * beats: a beat late by a busy event loop or a slow store is common, and makes a look that finds the host present.
 */
export const LATE_MS = 2 * BEAT_EVERY_MS
/**
 * A request that found nobody subscribed to a partition has its holder looked at once the holder is this silent,
 * rather than LATE_MS: the first request after a host died starts the takeover. (A hand-over leaves a partition
 * unsubscribed for a moment too, by a holder that beats on: one beat of silence spares those a look.) Since a host
 * may thus be looked at any time, a host that reconnects always claims its partitions again before serving.
 */
export const SUSPECT_AFTER_MS = BEAT_EVERY_MS
/**
 * A takeover waiting for the server to expire a silent holder's heartbeat looks again this soon, a few times
 * (the expiry is due: the pass runs EXPIRY_EARLY_MS before the holder's last beat, as heard here, is `ttlMs` old:
 * the beat was stored before it was heard, by as much as a loaded watch lags), before falling back to the pass's own
 * cadence.
 */
const EXPIRY_RECHECK_MS = 50
const EXPIRY_RECHECKS = 20
const EXPIRY_EARLY_MS = 250
/**
 * After this host takes partitions over from a host that is gone, it hands nothing to the other survivors for this
 * long: the plan for one host fewer moves some partitions between survivors too (the per-host cap changes: 18 of
 * 192 when 3 hosts become 2), and those hand-overs (drains, actors shut down and rebuilt elsewhere) would compete
 * with the takeover for the store and the CPU, and interrupt sessions the failure never touched. Every partition
 * stays served meanwhile; the survivors balance once the takeover has settled.
 */
export const SURVIVOR_HOLD_MS = 5000

const LAPSE = 'heartbeat not acknowledged in time: serving paused until this host claims its partitions again'

/**
 * The hosts bucket's max age, which every host of a cluster goes by: HOST_TTL_MS for a bucket created now; a bucket an
 * earlier version made keeps its own (said once at start; see the README on changing it).
 */
export async function hostsTtl(hosts: KV, log: Logger): Promise<number> {
  const { ttl } = await retryWhileStarting('hosts bucket status', () => hosts.status(), { log })
  if (ttl > 0 && ttl !== HOST_TTL_MS) log.info({ ttlMs: ttl, defaultMs: HOST_TTL_MS }, 'the hosts bucket keeps the heartbeat expiry it was created with')
  return ttl > 0 ? ttl : HOST_TTL_MS
}

export interface PlacementEvents {
  /** This host now owns the partition: start serving it (and resume work left there). */
  gained(kind: KindName, p: number): Promise<void>
  /**
   * This host no longer serves the partition: stop, and stop writing, before anyone else may start. `handOver`: the
   * next owner is named only after this resolves, so nothing sent to the partition until then reached it.
   */
  lost(kind: KindName, p: number, handOver: boolean): Promise<void>
  /** Partition p's holder changed, to this host or another (requests in flight to the old one may be sent again). */
  moved?(kind: KindName, p: number): void
}

export interface PlacementOptions {
  hosts: KV
  /** The hosts bucket's max age: how long after its last beat a host's key expires. Default HOST_TTL_MS. */
  ttlMs?: number
  /** How long before its key could expire a host stops serving. Default SERVE_MARGIN_MS. */
  serveMarginMs?: number
  placement: KV
  hostId: string
  kinds: readonly KindName[]
  /** The heartbeat record (without `at`, which is set per beat). */
  beat: () => Omit<HostBeat, 'at'>
  /** This host's presence on NATS, and a look at another's: a holder whose connection is gone is taken at once. */
  presence: Presence
  events: PlacementEvents
  log: Logger
}

interface Holder {
  host: string
  revision: number
}

const keyOf = (kind: string, p: number) => `${kind}.${partitionToken(p)}`

/**
 * Who should own each partition of a kind, given the live hosts: rendezvous hashing with a cap of
 * ceil(partitions / hosts) per host, filled greedily from the highest (host, partition) score down. Every host
 * computes the same plan from the same host set; a host joining or leaving moves little more than the
 * partitions it wins or held; no host gets more than its share. `partitions`: PARTITIONS (a model in test/bench asks
 * for others).
 */
export function plan(kind: string, hosts: readonly string[], partitions = PARTITIONS): string[] {
  const owners: string[] = new Array(partitions)
  if (!hosts.length) return owners
  const cap = Math.ceil(partitions / hosts.length)
  const load = new Map<string, number>()
  const pairs: Array<{ p: number; h: string; score: number }> = []
  for (let p = 0; p < partitions; p++) {
    for (const h of hosts) pairs.push({ p, h, score: fnv1a(`${h}/${keyOf(kind, p)}`) })
  }
  pairs.sort((a, b) => b.score - a.score || a.p - b.p || (a.h < b.h ? -1 : 1))
  for (const { p, h } of pairs) {
    if (owners[p] !== undefined || (load.get(h) ?? 0) >= cap) continue
    owners[p] = h
    load.set(h, (load.get(h) ?? 0) + 1)
  }
  return owners
}

/**
 * Single activation by partition, with traffic that grows with hosts, not partitions:
 *
 * - Each host writes one heartbeat (`host.<id>` in `troupe_hosts`, max age `ttlMs`) every BEAT_EVERY_MS
 *   and watches the others'. The live set is the hosts heard within the TTL and not seen gone.
 * - `troupe_placement` holds one record per partition naming its holder. It is written only when ownership
 *   changes: a claim of a partition with no record, a hand-over (the holder stops serving, then names the
 *   new owner), a takeover from a dead holder, or a holder claiming its partitions again after a gap. A takeover
 *   is allowed only once the holder is proven unable to serve: its NATS connection is gone (Presence, looked at
 *   once it is LATE_MS silent, or SUSPECT_AFTER_MS silent after a request found its partition unsubscribed), or the
 *   server itself has expired its heartbeat key; a slow watch or a paused
 *   claimant alone can never take from a live host.
 * - Who should own a partition is `plan(kind, live hosts)`. A holder hands over what another live host
 *   should own; nobody renews per-partition leases.
 * - A host serves only while its own heartbeat is fresh and its connection is the one it last claimed its
 *   partitions on (`serves`); after a gap or a reconnect it claims them again by compare-and-set before serving,
 *   and drops what moved on.
 */
export class Placement {
  private readonly store: RecordStore<PlacementRecord>
  /** Hosts heard, by id, with the monotonic time of their last beat's arrival. */
  private readonly heard = new Map<string, number>()
  /** Other hosts' last beats, for what they can do (`HostBeat.can`). */
  private readonly beats = new Map<string, HostBeat>()
  private readonly holders = new Map<string, Holder>()
  /** Keys this host serves, with the record revision it holds them at. */
  private readonly owned = new Map<string, number>()
  private validUntil = 0
  /** The heartbeat lapsed: records must be re-read before serving again. */
  private unverified = false
  /**
   * Serving paused for a late heartbeat only, which a beat landing on our previous one proves harmless (nobody can
   * have seen the key expire). False after a new connection (other hosts may have seen this one gone) or a beat
   * that did not land on the one before (the key may have expired): proven by nothing but claiming every partition
   * again.
   */
  private onlyLate = false
  private pausedAt = 0
  /** The revision of this host's last acknowledged beat: the next beat is written on it (0: none, or unknown). */
  private beatRevision = 0
  /** When the beat now in flight was sent (0: none), for the line a pause writes. */
  private beatSentAt = 0
  /** The event loop's delay since the last pause's line: says whether a lapse was this process's own. */
  private loopDelay?: LoopDelay
  private beatLoop?: Loop
  private tickLoop?: Loop
  private watchers: Array<{ stop(): void }> = []
  private stopped = false
  /** Bumped whenever a placement record or what we own changes: the tick's inputs. */
  private version = 0
  private lastInputs = ''
  /** A pass left something to look at again later (a holder's heartbeat not yet expired). */
  private waiting = false
  /** Quick looks left for a waiting takeover (EXPIRY_RECHECKS after each lapse). */
  private rechecks = 0
  /** The hosts that were live when this host last took partitions over, and until when nothing is handed to them. */
  private hold = { until: 0, hosts: new Set<string>() }
  private holdTimer?: NodeJS.Timeout
  /** Per other host: passes when its last beat heard here turns LATE_MS and `ttlMs` old, not up to a pass later. */
  private readonly silences = new Map<string, NodeJS.Timeout[]>()
  /** Hosts whose NATS connection was gone after their last beat heard here: dead, whatever their heartbeat key says. */
  private readonly departed = new Set<string>()
  /** Presence looks in flight. */
  private readonly looking = new Set<string>()
  /** The NATS connection this host last claimed its partitions on. */
  private connection: string | undefined
  private readonly ttlMs: number
  private readonly marginMs: number

  constructor(private readonly o: PlacementOptions) {
    this.store = new RecordStore<PlacementRecord>(o.placement)
    this.ttlMs = o.ttlMs ?? HOST_TTL_MS
    this.marginMs = o.serveMarginMs ?? SERVE_MARGIN_MS
  }

  async start(): Promise<void> {
    this.loopDelay = loopDelayWatch()
    this.connection = this.o.presence.connection()
    this.o.presence.start()
    // Start-up's steps wait out a cluster that is forming or has just lost a node (kit/retry.ts); the loops below
    // take over from there, each failed pass warned about and the next one tried.
    const { log } = this.o
    await retryWhileStarting('first heartbeat', () => this.beatOnce(), { log })
    await Promise.all([
      this.watch(this.o.hosts, 'host.>', (e) => {
        const id = e.key.slice('host.'.length)
        // A beat from a host seen gone: it came back (a restart on its data directory, or a reconnect).
        this.departed.delete(id)
        if (e.operation === 'PUT') {
          this.heard.set(id, performance.now())
          if (id === this.o.hostId) return
          this.silenceFrom(id)
          const beat = decode<HostBeat>(e.value)
          // What it can do decides what it may own: a change (a restart with other settings) is a new plan.
          if (JSON.stringify(this.beats.get(id)?.can) !== JSON.stringify(beat.can)) this.version++
          this.beats.set(id, beat)
        } else {
          this.heard.delete(id)
          this.beats.delete(id)
          for (const t of this.silences.get(id) ?? []) clearTimeout(t)
          this.silences.delete(id)
        }
      }),
      this.watch(this.o.placement, '>', (e) => {
        // Our own writes are applied when they succeed; the watch may deliver older entries after that.
        const before = this.holders.get(e.key)
        if ((before?.revision ?? 0) > e.revision) return
        if (e.operation === 'PUT') this.holders.set(e.key, { host: decode<PlacementRecord>(e.value).host, revision: e.revision })
        else this.holders.delete(e.key)
        this.version++
        if (before && before.host !== this.holders.get(e.key)?.host) this.movedOn(e.key)
        // Named for this host by a hand-over: take it now, not at the next pass (a restarted host is ready only once
        // it has taken what the others hand back).
        if (this.holders.get(e.key)?.host === this.o.hostId && !this.owned.has(e.key)) this.tickLoop?.wake()
      }),
    ])
    // Serve what is ours before saying we started: requests may follow at once.
    await retryWhileStarting('first placement pass', () => this.tick(), { log })
    const warn = (what: string) => (err: unknown) => this.o.log.warn({ err }, what)
    this.beatLoop = every(BEAT_EVERY_MS, () => this.beatOnce(), warn('heartbeat failed'))
    this.tickLoop = every(TICK_MS, () => this.tick(), warn('placement pass failed'))
  }

  /** True while this host may serve partition p of kind: it holds it and its heartbeat is fresh. */
  serves(kind: KindName, p: number): boolean {
    return this.owned.has(keyOf(kind, p)) && this.fresh()
  }

  /**
   * The revision of the placement record under which this host holds partition p (undefined: it does not). Every
   * change of holder writes the record, so a later holder's revision is always higher: a fencing token.
   */
  revision(kind: KindName, p: number): number | undefined {
    return this.owned.get(keyOf(kind, p))
  }

  /**
   * Whether this host serves partition p, waiting (up to `ms`) while that is unsettled: after a heartbeat gap
   * (a stalled loop, a SIGSTOP) a host re-reads its records before serving again, which keeps or drops each
   * partition within a pass or two. Resolves false at once for a partition it does not hold.
   */
  async whenServing(kind: KindName, p: number, ms: number): Promise<boolean> {
    const key = keyOf(kind, p)
    const end = performance.now() + ms
    while (this.owned.has(key) && !this.fresh() && !this.stopped && performance.now() < end) {
      await new Promise((r) => setTimeout(r, 25))
    }
    return this.serves(kind, p)
  }

  /** Whether this host holds partition p of kind (serving it or not: its heartbeat may have lapsed). */
  holds(kind: KindName, p: number): boolean {
    return this.owned.has(keyOf(kind, p))
  }

  /** Whether another host's heartbeat is live, as heard here. */
  othersLive(): boolean {
    for (const host of this.heard.keys()) if (host !== this.o.hostId && this.isLive(host)) return true
    return false
  }

  owns(kind: KindName): number[] {
    const prefix = `${kind}.`
    return [...this.owned.keys()]
      .filter((k) => k.startsWith(prefix))
      .map((k) => Number(k.slice(prefix.length + 1)))
      .sort((a, b) => a - b)
  }

  /** The store answers (a recent heartbeat was acknowledged) and every partition has a live holder. */
  get ready(): boolean {
    return this.unready() === undefined
  }

  /** What keeps this host from being ready (undefined: ready), for /readyz: a slow start says what it waits for. */
  unready(): string | undefined {
    if (!this.fresh()) return this.unverified ? 'claiming its partitions again after a heartbeat gap' : 'no heartbeat acknowledged yet'
    for (const kind of this.o.kinds) {
      for (let p = 0; p < PARTITIONS; p++) {
        const key = keyOf(kind, p)
        const h = this.holders.get(key)
        if (!h) return `${key} has no holder yet`
        if (h.host === this.o.hostId && !this.owned.has(key)) return `${key} named for this host, not taken yet`
        if (h.host !== this.o.hostId && !this.isLive(h.host)) return `${key} held by ${h.host}, which is silent`
      }
    }
    return undefined
  }

  private fresh(): boolean {
    this.noticeReconnect()
    return !this.unverified && performance.now() < this.validUntil
  }

  /**
   * While this host was disconnected, another may have seen it gone and taken its partitions: on a new connection it
   * serves nothing until it has claimed them again. Checked wherever serving is (a request on the new connection may
   * arrive before any pass runs).
   */
  private noticeReconnect(): void {
    const now = this.o.presence.connection()
    if (now === this.connection) return
    this.connection = now
    this.pause('a new NATS connection, which another host may have seen as this one gone: serving paused until this host claims its partitions again', true)
  }

  private isLive(host: string): boolean {
    if (host === this.o.hostId) return this.fresh()
    const at = this.heard.get(host)
    return at !== undefined && !this.departed.has(host) && performance.now() - at < this.ttlMs
  }

  /**
   * Another host was just heard: passes when it turns late (its presence is looked at) and when its heartbeat, as
   * heard here, lapses (its key is due to expire), rather than up to a pass later.
   */
  private silenceFrom(host: string): void {
    const timers = this.silences.get(host)
    if (timers) {
      for (const t of timers) t.refresh()
      return
    }
    const late = setTimeout(() => this.tickLoop?.wake(), LATE_MS)
    const lapse = setTimeout(
      () => {
        this.rechecks = EXPIRY_RECHECKS
        this.tickLoop?.wake()
      },
      Math.max(LATE_MS, this.ttlMs - EXPIRY_EARLY_MS),
    )
    late.unref()
    lapse.unref()
    this.silences.set(host, [late, lapse])
  }

  /**
   * Looks at the presence of every holder not heard for LATE_MS: one whose NATS connection is gone cannot receive
   * a request, and serves nothing when it reconnects until it has claimed its partitions again, so they may be
   * taken at once. A holder that answers, or does not answer in time (stopped, stalled, cut off), is left to its
   * heartbeat's expiry.
   */
  private lookAtLateHolders(): void {
    const now = performance.now()
    const holding = new Set([...this.holders.values()].map((h) => h.host))
    for (const [host, at] of this.heard) if (holding.has(host) && now - at >= LATE_MS) this.look(host)
  }

  /**
   * A request found nobody subscribed to partition p of kind: its holder is looked at now if it has been silent for
   * SUSPECT_AFTER_MS, rather than once it is late.
   */
  suspect(kind: KindName, p: number): void {
    const holder = this.holders.get(keyOf(kind, p))?.host
    const at = holder === undefined ? undefined : this.heard.get(holder)
    if (at !== undefined && performance.now() - at >= SUSPECT_AFTER_MS) this.look(holder!)
  }

  /** One look at another host's presence (one at a time per host); gone, it is taken over at once. */
  private look(host: string): void {
    const at = this.heard.get(host)
    if (at === undefined || host === this.o.hostId || this.departed.has(host) || this.looking.has(host) || this.stopped) return
    this.looking.add(host)
    void this.o.presence.gone(host).then((gone) => {
      this.looking.delete(host)
      // A beat heard meanwhile: it lives (it may have reconnected).
      if (!gone || this.stopped || this.heard.get(host) !== at) return
      this.departed.add(host)
      this.o.log.info({ gone: host, silentMs: Math.round(performance.now() - at) }, 'host gone (its NATS connection closed): taking its partitions over')
      this.tickLoop?.wake()
    })
  }

  /** What a host can do, as its last beat says (this host's own: what it beats with). */
  private abilities(host: string): HostAbilities | undefined {
    return host === this.o.hostId ? this.o.beat().can : this.beats.get(host)?.can
  }

  /** The live hosts' last beats, this host's own included: what the cluster's hosts are configured to do. */
  liveBeats(): Array<[string, Omit<HostBeat, 'at'>]> {
    const out: Array<[string, Omit<HostBeat, 'at'>]> = [[this.o.hostId, this.o.beat()]]
    for (const [host, beat] of this.beats) if (this.isLive(host)) out.push([host, beat])
    return out
  }

  private liveHosts(): string[] {
    const hosts = [...this.heard.keys()].filter((h) => h !== this.o.hostId && this.isLive(h))
    if (!this.stopped) hosts.push(this.o.hostId)
    return hosts
  }

  /**
   * One beat, written by compare-and-set on the previous one: a beat that lands there proves the key never expired
   * in between (an expired key is gone, and the write fails), so no other host can have taken a partition from
   * this one on a lapse, and a pause for a late beat ends without claiming every partition again. A beat that
   * does not land there (the key expired, or a beat that timed out landed after all) is written plainly, and
   * serving waits for the claims.
   */
  private async beatOnce(): Promise<void> {
    const sent = performance.now()
    const key = `host.${this.o.hostId}`
    const value = encode({ ...this.o.beat(), at: Date.now() } satisfies HostBeat)
    this.beatSentAt = sent
    let kept = false
    try {
      if (this.beatRevision) {
        try {
          this.beatRevision = await this.o.hosts.update(key, value, this.beatRevision)
          kept = true
        } catch (err) {
          if (!isCasConflict(err)) throw err
        }
      }
      if (!kept) {
        this.beatRevision = 0
        this.beatRevision = await this.o.hosts.put(key, value)
      }
    } catch (err) {
      // Landed or not: the next beat cannot know which revision to write on.
      this.beatRevision = 0
      throw err
    } finally {
      this.beatSentAt = 0
    }
    this.noticeReconnect()
    // Not on the one before: the key may have expired meanwhile, and another host taken a partition over.
    if (!kept && this.validUntil > 0) this.pause(LAPSE, true)
    this.validUntil = sent + this.ttlMs - this.marginMs
    if (kept && this.unverified && this.onlyLate) this.resumed('a late heartbeat landed on the one before')
  }

  /** One pass: reconcile what this host holds with what the live host set assigns it. */
  private async tick(): Promise<void> {
    if (this.stopped) return
    this.noticeReconnect()
    if (performance.now() >= this.validUntil) {
      // Our heartbeat may have expired: someone may be taking over. Serve nothing until a beat lands.
      this.pause()
      return
    }
    const before = new Set(this.owned.keys())
    if (this.unverified) await this.verify()
    this.lookAtLateHolders()
    const hosts = this.liveHosts().sort()
    // Nothing to do unless the live hosts or the records changed, or a takeover waits for an expiry: an idle
    // host spends next to nothing here.
    const inputs = `${hosts.join(',')}|${this.version}`
    if (inputs === this.lastInputs && !this.waiting) return
    this.lastInputs = ''
    this.waiting = false
    // A partition held by a host no longer live is about to be taken over: hold the survivors' own moves first.
    for (const h of this.holders.values()) {
      if (h.host !== this.o.hostId && !this.isLive(h.host)) {
        this.holdSurvivors()
        break
      }
    }
    const gone = new Map<string, Promise<boolean>>()
    const work: Array<Promise<void>> = []
    for (const kind of this.o.kinds) {
      const owners = plan(
        kind,
        ownersFor(kind, hosts, (h) => this.abilities(h)),
      )
      for (let p = 0; p < PARTITIONS; p++) work.push(this.reconcile(kind, p, owners[p]!, gone))
    }
    await Promise.all(work)
    this.lastInputs = inputs
    this.summarise(before)
    if (this.waiting && this.rechecks > 0) {
      this.rechecks--
      setTimeout(() => this.tickLoop?.wake(), EXPIRY_RECHECK_MS).unref()
    }
  }

  private async reconcile(kind: KindName, p: number, want: string, gone: Map<string, Promise<boolean>>): Promise<void> {
    const key = keyOf(kind, p)
    const holder = this.holders.get(key)
    const rev = this.owned.get(key)
    if (rev !== undefined) {
      // The record moved on without us (a takeover we slept through): stop at once.
      if (!holder || holder.host !== this.o.hostId || holder.revision !== rev) return this.drop(kind, p)
      if (want === this.o.hostId) return
      if (this.hold.hosts.has(want) && performance.now() < this.hold.until) return
      return this.handOver(kind, p, want)
    }
    if (holder?.host === this.o.hostId) {
      // Named by a hand-over, or by this same host before a restart (the data directory keeps the host id,
      // and its lock proves the old process is gone): take it, or pass it on without serving it.
      if (want === this.o.hostId) return this.take(kind, p, await this.store.update(key, this.record(), holder.revision))
      await this.store.update(key, this.record(want), holder.revision)
      return
    }
    if (want !== this.o.hostId) return
    if (!holder) return this.take(kind, p, await this.store.create(key, this.record()))
    if (this.isLive(holder.host)) return // the holder hands it over once it hears us
    // Silent in our view, but only its connection seen gone, or the server's expiry of its heartbeat, proves it can
    // no longer serve. The expiry is read at the bucket's leader, where the beats land: a replica that is behind has
    // expired an older beat and would say "gone" of a host that is still beating.
    if (!this.departed.has(holder.host)) {
      let expired = gone.get(holder.host)
      if (!expired) gone.set(holder.host, (expired = readAtLeader(this.o.hosts, `host.${holder.host}`).then((e) => !live(e))))
      if (!(await expired)) {
        this.waiting = true
        return
      }
    }
    await this.take(kind, p, await this.store.update(key, this.record(), holder.revision))
  }

  /** See SURVIVOR_HOLD_MS; the pass after the hold balances the survivors. */
  private holdSurvivors(): void {
    const now = performance.now()
    // The hosts live now: one that joins later is not a survivor, and gets its share at once.
    this.hold.hosts = new Set(this.liveHosts().filter((h) => h !== this.o.hostId))
    this.hold.until = now + SURVIVOR_HOLD_MS
    clearTimeout(this.holdTimer)
    this.holdTimer = setTimeout(() => {
      this.lastInputs = ''
      this.tickLoop?.wake()
    }, SURVIVOR_HOLD_MS + 10)
    this.holdTimer.unref()
  }

  private movedOn(key: string): void {
    const [kind, token] = key.split('.') as [KindName, string]
    this.o.events.moved?.(kind, Number(token.slice(1)))
  }

  private record(host = this.o.hostId): PlacementRecord {
    return { host, at: Date.now() }
  }

  private async take(kind: KindName, p: number, rev: number | false): Promise<void> {
    if (rev === false || this.stopped) return
    const key = keyOf(kind, p)
    const before = this.holders.get(key)?.host
    this.owned.set(key, rev)
    this.holders.set(key, { host: this.o.hostId, revision: rev })
    this.version++
    await this.o.events.gained(kind, p)
    // After subscribing: a request sent again at once reaches this host.
    if (before !== undefined && before !== this.o.hostId) this.movedOn(key)
  }

  private async drop(kind: KindName, p: number, handOver = false): Promise<void> {
    if (!this.owned.delete(keyOf(kind, p))) return
    this.version++
    await this.o.events.lost(kind, p, handOver)
  }

  /** Stop serving first, then name the next owner, who starts at once. */
  private async handOver(kind: KindName, p: number, to: string): Promise<void> {
    const key = keyOf(kind, p)
    const rev = this.owned.get(key)
    if (rev === undefined) return
    await this.drop(kind, p, true)
    await this.store.update(key, this.record(to), rev)
  }

  /** Serve nothing until verify() has claimed the partitions again; logged once per gap, since it shows as 503s. */
  private pause(why = LAPSE, needsClaims = false): void {
    if (needsClaims) this.onlyLate = false
    if (this.unverified || !this.owned.size) return
    this.unverified = true
    this.onlyLate = !needsClaims
    this.pausedAt = performance.now()
    const now = this.pausedAt
    // What the gap was made of: a beat long in flight (the store), or none in flight (this process's own loop).
    this.o.log.warn(
      { partitions: this.owned.size, beatInFlightMs: this.beatSentAt ? Math.round(now - this.beatSentAt) : undefined, loopDelayMaxMs: this.loopDelay?.take() },
      why,
    )
  }

  private resumed(how: string): void {
    this.unverified = false
    this.o.log.info(
      { pausedMs: Math.round(performance.now() - this.pausedAt), kept: this.owned.size, how },
      'serving resumed after a heartbeat gap or a reconnect',
    )
  }

  /**
   * After a heartbeat gap or a reconnect: claim each partition again by compare-and-set at the revision this host
   * holds it at, and drop those whose record moved on. The write is what makes it safe: a host that saw this one
   * gone and takes a partition over writes at that same revision, so of a takeover and this claim exactly one wins
   * (a read could pass just before the takeover's write lands, and both would serve).
   */
  private async verify(): Promise<void> {
    const on = this.connection
    await Promise.all(
      [...this.owned].map(async ([key, rev]) => {
        const next = await this.store.update(key, this.record(), rev)
        if (next !== false) {
          this.owned.set(key, next)
          this.holders.set(key, { host: this.o.hostId, revision: next })
          return
        }
        const [kind, token] = key.split('.') as [KindName, string]
        await this.drop(kind, Number(token.slice(1)))
      }),
    )
    // Reconnected again meanwhile (the next pass claims again), or resumed by a beat meanwhile.
    if (this.connection !== on || !this.unverified) return
    this.resumed('every partition claimed again')
  }

  /** One line per change of the set, partitions as ranges: `{gained: {session: "0-15"}}`. */
  private summarise(before: Set<string>): void {
    const gained = [...this.owned.keys()].filter((k) => !before.has(k))
    const lost = [...before].filter((k) => !this.owned.has(k))
    if (!gained.length && !lost.length) return
    const byKind = (keys: string[]) => {
      const out: Record<string, string> = {}
      for (const kind of this.o.kinds) {
        const ps = keys.filter((k) => k.startsWith(`${kind}.`)).map((k) => Number(k.slice(kind.length + 2)))
        if (ps.length) out[kind] = ranges(ps)
      }
      return out
    }
    const owned = Object.fromEntries(this.o.kinds.map((k) => [k, this.owns(k).length]))
    this.o.log.info({ gained: byKind(gained), lost: byKind(lost), owned, hosts: this.liveHosts().length }, 'partitions changed')
  }

  /**
   * Hands every partition to the host that should own it without us (it starts at once), then removes
   * our heartbeat. With no other live host the records keep naming us: a restart on the same data
   * directory takes them back at once.
   */
  async stop(): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    this.loopDelay?.stop()
    await this.tickLoop?.stop()
    await this.beatLoop?.stop()
    const before = new Set(this.owned.keys())
    const hosts = this.liveHosts()
    const plans = new Map(
      this.o.kinds.map((k) => [
        k,
        plan(
          k,
          ownersFor(k, hosts, (h) => this.abilities(h)),
        ),
      ]),
    )
    await Promise.all(
      [...this.owned.keys()].map(async (key) => {
        const [kind, token] = key.split('.') as [KindName, string]
        const p = Number(token.slice(1))
        if (!hosts.length) return this.drop(kind, p)
        await this.handOver(kind, p, plans.get(kind)![p]!).catch((err) => this.o.log.warn({ err, key }, 'hand-over failed'))
      }),
    )
    this.summarise(before)
    this.quiet()
    await this.o.hosts.delete(`host.${this.o.hostId}`).catch(() => undefined)
    this.o.presence.stop()
  }

  /** Stops beating and reconciling without handing anything over: what a crash looks like to others (tests). */
  async halt(): Promise<void> {
    this.stopped = true
    await this.tickLoop?.stop()
    await this.beatLoop?.stop()
    this.quiet()
    this.o.presence.stop()
  }

  /** Stops watching other hosts. */
  private quiet(): void {
    clearTimeout(this.holdTimer)
    for (const w of this.watchers) w.stop()
    for (const timers of this.silences.values()) for (const t of timers) clearTimeout(t)
  }

  /** Watches `key` of a bucket, resolving once the values stored before the call have been applied. */
  private async watch(kv: KV, key: string, apply: (e: KvWatchEntry) => void): Promise<void> {
    const w = await retryWhileStarting(`${key} watch`, () => kv.watch({ key }), { log: this.o.log })
    this.watchers.push(w)
    let caughtUp: () => void = () => undefined
    const initial = new Promise<void>((r) => (caughtUp = r))
    void (async () => {
      for await (const e of w) {
        apply(e)
        if (e.delta === 0) caughtUp()
      }
    })()
    if ((await retryWhileStarting(`${key} watch status`, () => kv.status(), { log: this.o.log })).values === 0) caughtUp()
    await Promise.race([initial, new Promise((r) => setTimeout(r, this.ttlMs).unref())])
  }
}

/** `[0,1,2,5,7,8]` → `"0-2,5,7-8"`. */
export function ranges(ps: number[]): string {
  const sorted = [...ps].sort((a, b) => a - b)
  const parts: string[] = []
  for (let i = 0; i < sorted.length; ) {
    let j = i
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1) j++
    parts.push(i === j ? `${sorted[i]}` : `${sorted[i]}-${sorted[j]}`)
    i = j + 1
  }
  return parts.join(',')
}
