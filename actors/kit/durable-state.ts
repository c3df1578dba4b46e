import type { KV } from '@nats-io/kv'
import { fail } from '../../protocol/errors/fail.js'
import { isId } from '../../protocol/ids.js'
import { partitionOf } from '../../protocol/subjects.js'
import type { BodyOf, KindContract, QueryOf, ReplyOf } from '../../protocol/ops/define.js'
import { openBucket } from './buckets.js'
import { DurableActor, type Home, type Outcome, type Self, type Work } from './durable-actor.js'
import { FencedRecord } from './fenced-record.js'
import { KeyedActors } from './keyed-actors.js'
import type { HandlerOf, OpInput, OpTable } from './ops.js'
import { type MarksOf, RecordStore } from './store.js'
import type { HostContext, KindRuntime } from './types.js'

export type { Outcome, Self, Work }

export interface DurableStateSpec<S, C extends KindContract> {
  /** The kind's contract: its name (log lines, partitions, record keys `<kind>.<id>`) and its ids. */
  contract: C
  /** The KV bucket of its records (and work markers), opened or created at start. */
  bucket: string
  /**
   * The state of an id without a record (Akka's empty state): the counter's 0. Absent: an object exists only once
   * `create` stored it, and an op on any other id answers `missing`.
   */
  initial?: (id: string) => S
  /** What an op on an id without a record answers when there is no `initial`. Default: the catalog's `not_found`. */
  missing?: (id: string) => Error
  /** An idle actor leaves memory after this long (ms); the next op loads it again. Default 600 000 (10 min). */
  idleMs?: number
  /** Work that outlasts a request, if the kind has any. */
  work?: Work<S>
  /** An actor whose work failed this many times in a row has it abandoned. Default 5. */
  maxRebuilds?: number
  /** The lifecycle events (webhooks) its state changes make, written with each change (kit/store.ts). Default none. */
  marks?: MarksOf<S>
}

type InputOf<O> = OpInput<BodyOf<O>, QueryOf<O>>

/** An op that may change the state: exclusive, one at a time per actor; its new state is stored before the next runs. */
export type ExclusiveOp<S, O> = (state: S, input: InputOf<O>, self: Self) => Outcome<S, ReplyOf<O>> | Promise<Outcome<S, ReplyOf<O>>>

/** An op that only reads the state (Restate's shared handler): it runs beside the exclusive ones, on the state last stored. */
export interface SharedOp<S, O> {
  readonly shared: (state: S, input: InputOf<O>, self: Self) => ReplyOf<O> | Promise<ReplyOf<O>>
}

/** A kind's ops on its state, by name: each exclusive (a function) or shared (`{ shared }`). */
export type StateOps<S, C extends KindContract> = { [K in keyof C['ops']]?: ExclusiveOp<S, C['ops'][K]> | SharedOp<S, C['ops'][K]> }

/** The handlers `ops` makes, typed as `implement` takes them. */
export type StateHandlers<C extends KindContract, T> = { [K in keyof T & keyof C['ops']]: HandlerOf<C['ops'][K]> }

/** An idle actor's default time in memory (ms). */
const IDLE_MS = 10 * 60_000

/**
 * Owner-placed actors whose state is one stored record (Akka's DurableStateBehavior, Orleans's grain state, Restate's
 * virtual objects). The kind gives its contract, its bucket, its initial state and its ops as functions of the
 * state; the kit does the rest: it loads the record when an actor is activated, runs its exclusive ops one at a time,
 * stores each new state fenced by the revision it replaces, steps the actor down on a lost fence or a lapsed
 * heartbeat, keeps its work marker while its state has work pending and resumes it on a takeover, and follows the
 * partitions placement gives this host (`runtime`). Reads cost no round trip while the actor is in memory.
 */
export class DurableState<S, C extends KindContract> {
  private readonly actors: KeyedActors<DurableActor<S>>
  private readonly records: RecordStore<S>
  private readonly home: Home<S>

  constructor(
    ctx: HostContext,
    private readonly spec: DurableStateSpec<S, C>,
    /** The kind's bucket, for records of its own beside the actors' (an agent's versions). */
    readonly kv: KV,
  ) {
    this.records = new RecordStore<S>(kv, undefined, false, spec.marks)
    this.actors = new KeyedActors(ctx, {
      kind: spec.contract.kind,
      kv,
      load: (id) => this.load(id),
      idleMs: spec.idleMs ?? IDLE_MS,
      resumes: spec.work !== undefined,
      maxRebuilds: spec.maxRebuilds,
    })
    this.home = { actors: this.actors, host: ctx.hostId, work: spec.work }
  }

  /** The handlers of the kind's ops on its state, for `implement` (beside handlers of its own for the other ops). */
  ops<T extends StateOps<S, C>>(table: T): StateHandlers<C, T> {
    const { kind, ops } = this.spec.contract
    const handlers: Record<string, (input: InputOf<unknown>) => Promise<unknown>> = {}
    for (const [name, op] of Object.entries(table) as Array<[string, ExclusiveOp<S, unknown> | SharedOp<S, unknown>]>) {
      if (ops[name]?.placement !== 'owner') throw new Error(`${kind}.${name}: an op on an actor's state must be placed on the owner`)
      handlers[name] =
        typeof op === 'function'
          ? (input) => this.withActor(input.id, (a) => a.write((s, self) => op(s, input, self)))
          : (input) => this.withActor(input.id, (a) => a.read((s, self) => op.shared(s, input, self)))
    }
    return handlers as StateHandlers<C, T>
  }

  /**
   * Runs `fn` on the actor of `id` as an exclusive op of the kind's own, with a reply of its own type: for a handler
   * that does more than change the state (a deployment's manual run stores its intent here, then waits for the work
   * that records it). Like an op of `ops`: after the exclusive ops queued before it, its new state stored before the
   * next one runs, an ApiError it throws its answer.
   */
  exclusive<R>(id: string, fn: (state: S, self: Self) => Outcome<S, R> | Promise<Outcome<S, R>>): Promise<R> {
    return this.withActor(id, (a) => a.write(fn))
  }

  /**
   * The state of `id`, undefined when it has no record and no initial state. From the actor where this host owns it
   * (activated if need be: no round trip while it stays in memory), from the store anywhere else.
   */
  async read(id: string): Promise<S | undefined> {
    if (!this.isId(id)) return undefined
    if (this.actors.serves(id)) return (await this.actors.get(id))?.state
    return (await this.records.get(this.key(id)))?.value ?? this.spec.initial?.(id)
  }

  /**
   * Stores a new object's first state, from any host: false when `id` has a record already. Its owner, when that is
   * this host, has it in memory from here. The state has no work pending (an op on the owner starts work).
   */
  async create(id: string, state: S): Promise<boolean> {
    if (this.spec.work?.pending(state)) throw new Error(`${this.spec.contract.kind} ${id}: create stores a state without work pending`)
    const rev = await this.records.create(this.key(id), state)
    if (rev === false) return false
    if (this.actors.serves(id) && !this.actors.peek(id)) this.actors.add(this.actor(id, state, rev, false))
    return true
  }

  /** The actors in memory on this host and their states, for metrics read at a scrape (the work queues' depth). */
  *inMemory(): Iterable<[id: string, state: S]> {
    for (const a of this.actors.inMemory()) yield [a.id, a.state]
  }

  /** Whether this host holds the partition of `id` (its heartbeat aside): only then is what it last saw of `id` current. */
  holds(id: string): boolean {
    return this.actors.owned.has(partitionOf(id))
  }

  /** The kind as this host runs it: its op table, and placement's partitions wired to its actors. */
  runtime(ops: OpTable, close?: () => unknown): KindRuntime {
    return this.actors.runtime(ops, close)
  }

  private key(id: string): string {
    return `${this.spec.contract.kind}.${id}`
  }

  /** Ids reach KV keys: one not shaped like the kind's (dots, wildcards) has no record. */
  private isId(id: string): boolean {
    return typeof id === 'string' && isId(this.spec.contract.id.prefix, id)
  }

  private actor(id: string, state: S, revision: number, workMarked: boolean): DurableActor<S> {
    return new DurableActor(this.home, id, state, new FencedRecord(this.records, this.key(id), revision), workMarked)
  }

  private async load(id: string): Promise<DurableActor<S> | undefined> {
    if (!this.isId(id)) return undefined
    const [cur, marked] = await Promise.all([this.records.get(this.key(id)), this.spec.work ? this.actors.hasWork(id) : false])
    if (cur) return this.actor(id, cur.value, cur.revision, marked)
    return this.spec.initial ? this.actor(id, this.spec.initial(id), 0, marked) : undefined
  }

  /** Runs `fn` on the live actor of `id`, activating it if need be. */
  private async withActor<R>(id: string, fn: (a: DurableActor<S>) => Promise<R>): Promise<R> {
    for (let attempt = 0; ; attempt++) {
      const a = await this.actors.get(id)
      if (!a) throw this.spec.missing?.(id) ?? fail('not_found', this.spec.contract.id.noun, id)
      // Passivated between being found and being asked (an idle sweep in between): the next activation answers.
      if (!a.dead || attempt === 2) return fn(a)
    }
  }
}

/** Opens the kind's bucket and its durable-state actors on this host. */
export async function durableState<S, C extends KindContract>(ctx: HostContext, spec: DurableStateSpec<S, C>): Promise<DurableState<S, C>> {
  return new DurableState(ctx, spec, await openBucket(ctx.kvm, ctx.storage, spec.bucket))
}
