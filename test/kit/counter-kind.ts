import { type } from 'arktype'
import { defineKind, returns } from '../../protocol/ops/define.js'
import { partitionOf } from '../../protocol/subjects.js'
import { Activations } from '../../actors/kit/activation.js'
import { MailboxActor } from '../../actors/kit/actor.js'
import { openBucket } from '../../actors/kit/buckets.js'
import { FenceLost } from '../../actors/kit/mailbox.js'
import { implement } from '../../actors/kit/ops.js'
import { RecordStore } from '../../actors/kit/store.js'
import type { ActorKindDef } from '../../actors/kit/types.js'

/** A test kind: a counter per id, one op placed on the owner of the id. Everything else is the kit's. */
export const CounterKind = defineKind(
  'counter',
  { param: 'counter_id', prefix: 'ctr', noun: 'Counter' },
  {
    add: { placement: 'owner', body: type({ by: 'number.integer' }), reply: returns<{ value: number; host: string; activation: number }>() },
  },
)

let activations = 0

export const counterKind: ActorKindDef = {
  contract: CounterKind,
  async start(ctx) {
    const store = new RecordStore<number>(await openBucket(ctx.kvm, ctx.storage, 'troupe_test_counters'))
    const serves = (p: number) => ctx.serves('counter', p)
    class Counter extends MailboxActor {
      readonly activation = ++activations
      constructor(
        id: string,
        private value: number,
        private revision: number,
      ) {
        super(id, counters, { kind: 'counter', log: ctx.log, work: { kv: store.kv, key: `work.${id}` }, serves: () => serves(partitionOf(id)) })
      }
      add(by: number) {
        return this.mb.write(async () => {
          // The record's revision is the fence: a host that lost the counter cannot overwrite its new owner.
          const rev = this.revision ? await store.update(`c.${this.id}`, this.value + by, this.revision) : await store.create(`c.${this.id}`, by)
          if (rev === false) throw new FenceLost(`counter ${this.id} moved on`)
          this.revision = rev
          this.value += by
          return { value: this.value, host: ctx.hostId, activation: this.activation }
        })
      }
    }
    const load = async (id: string) => {
      const cur = await store.get(`c.${id}`)
      return new Counter(id, cur?.value ?? 0, cur?.revision ?? 0)
    }
    const counters: Activations<Counter> = new Activations({ kind: 'counter', log: ctx.log, serves, load, listWork: async () => [], idleMs: 60_000 })
    const ops = implement(CounterKind, { add: async ({ id, body }) => (await counters.get(id))!.add(body.by) })
    return { ops, acquired: (p) => counters.acquired(p), released: (p) => counters.released(p), close: () => counters.close() }
  },
}
