import { decode } from '../../../protocol/codec.js'
import {
  Buckets,
  PARTITIONS,
  partitionOf,
  partitionToken,
  SANDBOX_HOST_PREFIX,
  type HostBeat,
  type PlacementRecord,
  type SandboxHostBeat,
} from '../../../protocol/subjects.js'
import { SESSION_PREFIX, type SessionRecord } from '../../../actors/session/index.js'
import type { Reads } from './reads.js'

/** A host whose last beat is older than this is shown as stale: the hosts bucket's TTL, past which it is gone. */
const STALE_MS = 2500
/** Running sessions listed by name; the rest are counted. */
const RUNNING_SHOWN = 50
export const KINDS = ['agent', 'session'] as const

export interface HostView extends HostBeat {
  id: string
  beat_age_ms: number
  stale: boolean
}

export interface SandboxHostView extends SandboxHostBeat {
  id: string
  beat_age_ms: number
  stale: boolean
}

export interface KindPlacement {
  /** Host id → the partitions it holds. */
  held: Record<string, number[]>
  /** Partitions with no record. */
  unheld: number[]
}

export interface SessionsView {
  total: number
  by_status: Record<string, number>
  running: Array<{ id: string; agent_id: string | undefined; running_since: number | null; partition: string; host: string | undefined }>
  /** Running sessions beyond the ones listed. */
  running_more: number
}

/** The hosts, where the partitions are, and the sessions: what `troupe status` showed before its other sections. */
export interface ClusterView {
  hosts: HostView[]
  /** `troupe sandbox` processes (their beats in the hosts bucket). */
  sandbox_hosts: SandboxHostView[]
  /** Null while the placement bucket does not exist. */
  partitions: Record<(typeof KINDS)[number], KindPlacement> | null
  sessions: SessionsView
}

/** From the hosts, placement and sessions buckets. */
export async function readCluster(reads: Reads, now: number): Promise<ClusterView> {
  const counts: SessionsView = { total: 0, by_status: {}, running: [], running_more: 0 }
  const running: Array<{ id: string; rec: SessionRecord }> = []
  const [hosts, sandboxHosts, placement] = await Promise.all([
    reads.bucket(Buckets.hosts, 'host.'),
    reads.bucket(Buckets.hosts, SANDBOX_HOST_PREFIX),
    reads.bucket(Buckets.placement),
    // Sessions are the most numerous records: each is counted as it is read, and only the running ones listed are kept.
    reads.bucket(Buckets.sessions, SESSION_PREFIX, (key, v) => {
      const rec = decode<SessionRecord>(v)
      const st = rec.session?.status ?? 'unknown'
      counts.total++
      counts.by_status[st] = (counts.by_status[st] ?? 0) + 1
      if (st !== 'running') return
      if (running.length === RUNNING_SHOWN) counts.running_more++
      else running.push({ id: key.slice(SESSION_PREFIX.length), rec })
    }),
  ])
  const view: ClusterView = {
    hosts: [...(hosts?.values ?? [])]
      .map(([key, v]) => {
        const beat = decode<HostBeat>(v)
        return { id: key.slice('host.'.length), ...beat, beat_age_ms: now - beat.at, stale: now - beat.at > STALE_MS }
      })
      .sort((a, b) => (a.started_at ?? 0) - (b.started_at ?? 0)),
    sandbox_hosts: [...(sandboxHosts?.values ?? [])]
      .map(([key, v]) => {
        const beat = decode<SandboxHostBeat>(v)
        return { id: key.slice(SANDBOX_HOST_PREFIX.length), ...beat, beat_age_ms: now - beat.at, stale: now - beat.at > STALE_MS }
      })
      .sort((a, b) => a.started_at - b.started_at),
    partitions: placement ? placementView(placement.values) : null,
    sessions: counts,
  }
  for (const { id, rec } of running) {
    const p = partitionOf(id)
    const holder = Object.entries(view.partitions?.session.held ?? {}).find(([, ps]) => ps.includes(p))?.[0]
    counts.running.push({ id, agent_id: rec.session.agent?.id, running_since: rec.running_since, partition: partitionToken(p), host: holder })
  }
  return view
}

function placementView(records: Map<string, Uint8Array>): NonNullable<ClusterView['partitions']> {
  const view = Object.fromEntries(KINDS.map((k) => [k, { held: {}, unheld: [] } as KindPlacement])) as NonNullable<ClusterView['partitions']>
  for (const kind of KINDS) {
    for (let p = 0; p < PARTITIONS; p++) {
      const v = records.get(`${kind}.${partitionToken(p)}`)
      if (!v) {
        view[kind].unheld.push(p)
        continue
      }
      const { host } = decode<PlacementRecord>(v)
      ;(view[kind].held[host] ??= []).push(p)
    }
  }
  return view
}
