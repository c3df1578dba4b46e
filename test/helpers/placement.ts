import { Kvm } from '@nats-io/kv'
import type { NatsConnection } from '@nats-io/transport-node'
import { decode } from '../../protocol/codec.js'
import { Buckets, partitionOf, partitionToken } from '../../protocol/subjects.js'
import type { TroupeProcess } from './troupe.js'

/** The host id a `troupe` process printed in its start-up block. */
export const hostOf = (p: TroupeProcess): string | undefined => /^\s+host\s+(host_[A-Za-z0-9]+)/m.exec(p.stdout())?.[1]

/** Who holds the partition of an id of `kind`, as the placement records say (undefined: nobody yet). */
export async function placementOf(nc: NatsConnection, kind: string): Promise<(id: string) => Promise<string | undefined>> {
  const records = await new Kvm(nc).open(Buckets.placement)
  return async (id) => {
    const e = await records.get(`${kind}.${partitionToken(partitionOf(id))}`)
    return e?.operation === 'PUT' ? decode<{ host: string }>(e.value).host : undefined
  }
}
