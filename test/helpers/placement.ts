import { Kvm } from '@nats-io/kv'
import type { NatsConnection } from '@nats-io/transport-node'
import { decode } from '../../protocol/codec.js'
import { Buckets, PARTITIONS, partitionOf, partitionToken } from '../../protocol/subjects.js'
import type { TroupeProcess } from './troupe.js'
import { until } from './wait.js'

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

/** Waits until `hosts` each hold an equal share of `kind`'s partitions, as the placement records say. */
export async function untilSplitEvenly(nc: NatsConnection, kind: string, hosts: readonly TroupeProcess[], ms = 60_000): Promise<void> {
  const records = await new Kvm(nc).open(Buckets.placement)
  await until(
    'partitions split evenly',
    async () => {
      const counts = new Map<string, number>()
      for await (const k of await records.keys(`${kind}.>`)) {
        const e = await records.get(k)
        if (e?.operation === 'PUT') {
          const h = decode<{ host: string }>(e.value).host
          counts.set(h, (counts.get(h) ?? 0) + 1)
        }
      }
      return hosts.every((p) => counts.get(hostOf(p)!) === PARTITIONS / hosts.length)
    },
    ms,
    100,
  )
}
