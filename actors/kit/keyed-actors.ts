import type { KV } from '@nats-io/kv'
import { partitionOf } from '../../protocol/subjects.js'
import { Activations, type Activatable, type ActivationOptions } from './activation.js'
import type { MailboxOptions } from './mailbox.js'
import type { OpTable } from './ops.js'
import { partitionOfKey } from './owned.js'
import { live, type MarksOf, RecordStore } from './store.js'
import type { HostContext, KindRuntime } from './types.js'
import { listMarked, workKey } from './work-marks.js'

export interface KeyedActorsOptions<A extends Activatable> extends Pick<ActivationOptions<A>, 'maxRebuilds' | 'rebuildMaxWaitMs'> {
  /** The kind: names its log lines and its partitions, as in its contract. */
  kind: string
  /** The bucket its work markers are kept in (`work.<id>`). */
  kv: KV
  /** Builds the actor of `id` from what is stored (its record, its history); undefined when it does not exist. */
  load(id: string): Promise<A | undefined>
  /** An idle actor leaves memory after this long (ms). */
  idleMs: number
  /** Its actors may have work that outlasts a request (work markers), resumed on a takeover. Default true; false lists nothing. */
  resumes?: boolean
}

/** What an actor's mailbox needs to live on this host: everything but its id and where it reports a failure. */
export type MailboxHome = Omit<MailboxOptions, 'id' | 'onFail'>

/**
 * The actors of a kind whose ops are placed on the owner of their id's partition (Akka's sharded entities, Orleans's
 * grains): single activation (`Activations`) wired to this host. Their partitions are the ones placement gives it
 * (`runtime`), their writes stop when its heartbeat lapses (`serves`), their work markers are `work.<id>` in the
 * kind's bucket and a takeover resumes the marked ones. The layer under `DurableState`; any keyed actor with
 * its own way of storing (a session's event log) builds on it directly.
 */
export class KeyedActors<A extends Activatable> extends Activations<A> {
  constructor(
    private readonly ctx: HostContext,
    private readonly k: KeyedActorsOptions<A>,
  ) {
    super({
      kind: k.kind,
      log: ctx.log,
      serves: (p) => ctx.serves(k.kind, p),
      load: (id) => k.load(id),
      listWork: k.resumes === false ? async () => [] : (p) => listMarked(k.kv, p),
      idleMs: k.idleMs,
      maxRebuilds: k.maxRebuilds,
      rebuildMaxWaitMs: k.rebuildMaxWaitMs,
    })
  }

  get kind(): string {
    return this.k.kind
  }

  /** Whether this host may serve (and write for) `id` right now: it holds its partition and its heartbeat is fresh. */
  serves(id: string): boolean {
    return this.ctx.serves(this.k.kind, partitionOf(id))
  }

  /** The mailbox settings of the actor of `id` on this host. `workMarked`: it was loaded with its marker present. */
  mailbox(id: string, workMarked = false): MailboxHome {
    return {
      kind: this.k.kind,
      log: this.ctx.log,
      work: { kv: this.k.kv, key: workKey(id) },
      workMarked,
      serves: () => this.serves(id),
      whenServing: (ms) => this.ctx.whenServing(this.k.kind, partitionOf(id), ms),
    }
  }

  /** Whether `id` has a work marker: known here without a round trip once its partition's markers were listed. */
  async hasWork(id: string): Promise<boolean> {
    return this.marks.has(id) ?? live(await this.k.kv.get(workKey(id)))
  }

  /**
   * The kind's records `<prefix><id>` in its bucket, cached (as bytes, a copy per read) while this host owns the id's
   * partition, since it is then their only writer: a read of an idle actor, or its rebuild, costs no round trip. A
   * partition gained or given away drops its entries (another host may have written them meanwhile). One per kind.
   */
  records<T>(prefix: string, marks?: MarksOf<T>): RecordStore<T> {
    const partitionOfRecord = partitionOfKey(prefix)
    const store = new RecordStore<T>(this.k.kv, (key) => this.owned.has(partitionOfRecord(key)), true, marks)
    this.owned.onChange = (p) => store.forget((key) => partitionOfRecord(key) === p)
    return store
  }

  /** The kind as this host runs it: its ops, and the partitions placement gives and takes wired to these actors. */
  runtime(ops: OpTable, close: () => unknown = () => undefined): KindRuntime {
    return {
      ops,
      acquired: (p) => this.acquired(p),
      released: (p, handOver) => this.released(p, handOver),
      close: async () => {
        await close()
        await this.close()
      },
    }
  }
}
