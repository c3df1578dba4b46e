// Who holds a session's partition, read from `troupe_placement` as the hosts themselves do: the fault runner uses
// it to know which sessions a host fault touches.
import type { NatsConnection } from '@nats-io/transport-node'
import { Kvm, type KV } from '@nats-io/kv'
import { decode } from '../../protocol/codec.js'
import { Buckets, PARTITIONS, partitionOf, partitionToken, type PlacementRecord } from '../../protocol/subjects.js'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export function placementReader(nc: NatsConnection): (session: string) => Promise<string | undefined> {
  let kv: Promise<KV> | undefined
  return async (session) => {
    kv ??= new Kvm(nc).open(Buckets.placement)
    try {
      const e = await (await kv).get(`session.${partitionToken(partitionOf(session))}`)
      return e && e.operation === 'PUT' ? decode<PlacementRecord>(e.value).host : undefined
    } catch (err) {
      // A failed open must not stick: the next look-up tries again.
      kv = undefined
      throw err
    }
  }
}

/**
 * Waits until every partition of both kinds is held by one of `hosts`, each holding at least its share, and the
 * holders stayed the same for two looks a second apart: load that starts during the hand-overs of a host that just
 * joined would count their 503s as faults of nobody's. False when that does not happen within `timeoutMs`.
 */
export async function waitBalanced(nc: NatsConnection, hosts: string[], timeoutMs = 60_000): Promise<boolean> {
  let kv: KV | undefined
  const deadline = Date.now() + timeoutMs
  const share = Math.floor(PARTITIONS / hosts.length)
  let last = ''
  while (Date.now() < deadline) {
    try {
      kv ??= await new Kvm(nc).open(Buckets.placement)
      const store = kv
      const keys = ['agent', 'session'].flatMap((kind) => Array.from({ length: PARTITIONS }, (_, p) => `${kind}.${partitionToken(p)}`))
      // All at once, and bounded: during a NATS fault each read could wait out its own timeout.
      const holders = await Promise.race([
        Promise.all(
          keys.map(async (k) => {
            const e = await store.get(k)
            return e && e.operation === 'PUT' ? decode<PlacementRecord>(e.value).host : ''
          }),
        ),
        sleep(5000).then(() => {
          throw new Error('placement read timed out')
        }),
      ])
      const counts = (kind: number) => hosts.map((h) => holders.slice(kind * PARTITIONS, (kind + 1) * PARTITIONS).filter((x) => x === h).length)
      const balanced = holders.every((h) => hosts.includes(h)) && [0, 1].every((k) => counts(k).every((c) => c >= share))
      const now = holders.join(',')
      if (balanced && now === last) return true
      last = balanced ? now : ''
    } catch {}
    await sleep(1000)
  }
  return false
}
