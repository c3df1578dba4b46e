import { type } from 'arktype'
import { defineKind, returns } from '../../protocol/ops/define.js'
import { type ActorKindDef, durableState, implement, NotServing } from '../../actors/kit/index.js'

/** A test kind: a counter per id, one op placed on the owner of the id. Everything else is the kit's. */
export const CounterKind = defineKind(
  'counter',
  { param: 'counter_id', prefix: 'ctr', noun: 'Counter' },
  {
    add: { placement: 'owner', body: type({ by: 'number.integer' }), reply: returns<{ value: number; host: string; activation: number }>() },
    /** Stops serving mid-request in a path the kind does not map itself: what the host answers for it. */
    fenced: { placement: 'any', body: type({}), reply: returns<never>() },
  },
)

/** Its state is the count, a record in its own bucket; a counter never added to counts from 0. */
export const counterKind: ActorKindDef = {
  contract: CounterKind,
  async start(ctx) {
    const counters = await durableState(ctx, { contract: CounterKind, bucket: 'troupe_test_counters', initial: () => 0 })
    const ops = counters.ops({
      add: (value, { body }, self) => ({ state: value + body.by, reply: { value: value + body.by, host: self.host, activation: self.activation } }),
    })
    const fenced = async (): Promise<never> => {
      throw new NotServing('counter: this host stopped serving it mid-request')
    }
    return counters.runtime(implement(CounterKind, { ...ops, fenced }))
  },
}
