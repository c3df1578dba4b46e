// Stacked faults on a 3-node cluster, and what each node then holds of a stream: the conditions under which
// nats-server 2.9.10 applied subject purges unlike on a stream's replicas (test/chaos/purge-divergence.ts).
import type { NatsCluster } from './nats-cluster.js'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export interface StackedFaults {
  /** Default 3. */
  rounds?: number
  /** How long the third node stays SIGSTOPped in each round. Default 10 s. */
  pauseMs?: number
  /** The wait between two faults (half as long again before the first and while the first node is down). Default 2 s. */
  gapMs?: number
}

/**
 * Rounds of: the third node SIGSTOPped, then resumed; the first SIGKILLed and restarted; the second SIGKILLed and
 * restarted at once. Load meanwhile is the caller's.
 */
export async function stackFaults(c: NatsCluster, opts: StackedFaults = {}): Promise<void> {
  const { rounds = 3, pauseMs = 10_000, gapMs = 2000 } = opts
  const [n1, n2, n3] = c.nodes
  for (let round = 0; round < rounds; round++) {
    await sleep(gapMs * 1.5)
    n3!.pause()
    await sleep(pauseMs)
    n3!.resume()
    await sleep(gapMs)
    await n1!.kill()
    await sleep(gapMs * 1.5)
    await n1!.restart()
    await sleep(gapMs)
    await n2!.kill()
    await n2!.restart()
  }
}

/** A stream's state as one node's replica holds it (its monitoring `/jsz`). */
export interface ReplicaState {
  node: string
  messages?: number
  bytes?: number
  first_seq?: number
  last_seq?: number
}

/** Each node's own state of `stream`. */
export async function replicaStates(c: NatsCluster, stream: string): Promise<ReplicaState[]> {
  const states: ReplicaState[] = []
  for (const node of c.nodes) {
    const j = (await (await fetch(`${node.monitorUrl}/jsz?accounts=true&streams=true`)).json()) as any
    const st = j.account_details?.flatMap((a: any) => a.stream_detail ?? []).find((s: any) => s.name === stream)?.state
    states.push({ node: node.name, messages: st?.messages, bytes: st?.bytes, first_seq: st?.first_seq, last_seq: st?.last_seq })
  }
  return states
}
