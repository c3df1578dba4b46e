import { jetstream, type JetStreamClient } from '@nats-io/jetstream'
import { decode } from '../../protocol/codec.js'
import {
  Buckets,
  PARTITIONS,
  partitionOf,
  partitionToken,
  SANDBOX_HOST_PREFIX,
  type HostBeat,
  type PlacementRecord,
  type SandboxHostBeat,
} from '../../protocol/subjects.js'
import { SESSION_PREFIX, type SessionRecord } from '../../actors/session/index.js'
import { needJetStream, parse, type Io } from './io.js'
import { keyringConflict, kindsLeft } from '../cluster-config.js'
import { readStream } from './read-stream.js'

export const STATUS_USAGE = { synopsis: 'status [--json]', summary: 'hosts, sandbox hosts, partitions per host and running sessions' }

/** A host whose last beat is older than this is shown as stale: the hosts bucket's TTL, past which it is gone. */
const STALE_MS = 2500
/** Running sessions listed by name; the rest are counted. */
const RUNNING_SHOWN = 50
const KINDS = ['agent', 'session'] as const

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

export interface StatusReport {
  nats: { url: string; server: string }
  hosts: HostView[]
  /** `troupe sandbox` processes (their beats in the hosts bucket). */
  sandbox_hosts: SandboxHostView[]
  /** Null while the placement bucket does not exist. */
  partitions: Record<(typeof KINDS)[number], KindPlacement> | null
  sessions: {
    total: number
    by_status: Record<string, number>
    running: Array<{ id: string; agent_id: string | undefined; running_since: number | null; partition: string; host: string | undefined }>
    /** Running sessions beyond the ones listed. */
    running_more: number
  }
}

/** `troupe status [--json]`: read from the hosts, placement and sessions buckets, nothing asked of the hosts. */
export async function status(args: string[], io: Io): Promise<void> {
  const { values } = parse(args, { json: { type: 'boolean' } })
  const conn = await io.connect()
  needJetStream(conn)
  const js = jetstream(conn.nc)
  const [hosts, sandboxHosts, placement, sessions] = await Promise.all([
    readBucket(js, Buckets.hosts, 'host.'),
    readBucket(js, Buckets.hosts, SANDBOX_HOST_PREFIX),
    readBucket(js, Buckets.placement, ''),
    readBucket(js, Buckets.sessions, SESSION_PREFIX),
  ])
  const now = Date.now()
  const report: StatusReport = {
    nats: { url: conn.url, server: conn.nc.info?.version ?? '?' },
    hosts: [...(hosts ?? [])]
      .map(([key, v]) => {
        const beat = decode<HostBeat>(v)
        return { id: key.slice('host.'.length), ...beat, beat_age_ms: now - beat.at, stale: now - beat.at > STALE_MS }
      })
      .sort((a, b) => (a.started_at ?? 0) - (b.started_at ?? 0)),
    sandbox_hosts: [...(sandboxHosts ?? [])]
      .map(([key, v]) => {
        const beat = decode<SandboxHostBeat>(v)
        return { id: key.slice(SANDBOX_HOST_PREFIX.length), ...beat, beat_age_ms: now - beat.at, stale: now - beat.at > STALE_MS }
      })
      .sort((a, b) => a.started_at - b.started_at),
    partitions: placement ? placementView(placement) : null,
    sessions: { total: 0, by_status: {}, running: [], running_more: 0 },
  }
  for (const [key, v] of sessions ?? []) {
    const rec = decode<SessionRecord>(v)
    const st = rec.session?.status ?? 'unknown'
    report.sessions.total++
    report.sessions.by_status[st] = (report.sessions.by_status[st] ?? 0) + 1
    if (st !== 'running') continue
    if (report.sessions.running.length === RUNNING_SHOWN) {
      report.sessions.running_more++
      continue
    }
    const id = key.slice(SESSION_PREFIX.length)
    const p = partitionOf(id)
    const holder = Object.entries(report.partitions?.session.held ?? {}).find(([, ps]) => ps.includes(p))?.[0]
    report.sessions.running.push({ id, agent_id: rec.session.agent?.id, running_since: rec.running_since, partition: partitionToken(p), host: holder })
  }
  if (values.json) io.out(JSON.stringify(report))
  else for (const line of render(report, now)) io.out(line)
}

/** The current values of a bucket's keys under `prefix`, by key; null when the bucket does not exist. */
async function readBucket(js: JetStreamClient, bucket: string, prefix: string): Promise<Map<string, Uint8Array> | null> {
  const subjects = `$KV.${bucket}.`
  const read = await readStream(js, { stream: `KV_${bucket}`, filter: `${subjects}${prefix}>`, deliver: 'last_per_subject' })
  if (!read) return null
  const out = new Map<string, Uint8Array>()
  for await (const m of read) {
    const op = m.headers?.get('KV-Operation')
    if (op === 'DEL' || op === 'PURGE') continue
    out.set(m.subject.slice(subjects.length), m.data)
  }
  return out
}

function placementView(records: Map<string, Uint8Array>): NonNullable<StatusReport['partitions']> {
  const view = Object.fromEntries(KINDS.map((k) => [k, { held: {}, unheld: [] } as KindPlacement])) as NonNullable<StatusReport['partitions']>
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

function render(r: StatusReport, now: number): string[] {
  const lines = [`NATS ${r.nats.url} (nats-server ${r.nats.server})`, '']
  const live = r.hosts.filter((h) => !h.stale)
  lines.push(`hosts: ${live.length} live${r.hosts.length > live.length ? `, ${r.hosts.length - live.length} stale` : ''}`)
  for (const h of r.hosts) {
    // Beats written before HostBeat grew its fields carry only `at`.
    const up = h.started_at ? `up ${age(now - h.started_at)}` : 'up ?'
    lines.push(
      `  ${h.id}  ${h.role ?? '?'}  pid ${h.pid ?? '?'} on ${h.hostname ?? '?'}  ${up}  ` +
        `${h.stale ? `STALE: last beat ${age(h.beat_age_ms)} ago` : `beat ${age(h.beat_age_ms)} ago`}${h.http_url ? `  ${h.http_url}` : ''}`,
    )
    if (h.can) {
      const left = kindsLeft(h.can)
      lines.push(
        `    model ${h.can.model ? 'yes' : 'none'}  keyring ${h.can.keyring ? `${h.can.keyring.sealing} sealing (${Object.keys(h.can.keyring.keys).join(', ')})` : 'none'}  sandbox ${h.can.sandbox}` +
          (left.length ? `  owns none of ${left.join('; ')} while a host that can is live` : ''),
      )
    }
  }
  const conflict = keyringConflict(live.map((h) => [h.id, h] as const))
  if (conflict) lines.push(`  KEYRINGS DISAGREE: ${conflict}; vault writes and webhooks are refused`)
  if (r.sandbox_hosts.length) {
    lines.push('', `sandbox hosts: ${r.sandbox_hosts.filter((h) => !h.stale).length} live`)
    for (const h of r.sandbox_hosts) {
      lines.push(
        `  ${h.id}  sandbox ${h.kind}${h.enforces_network ? '' : ' (no network policy)'}  pid ${h.pid} on ${h.hostname}  up ${age(now - h.started_at)}  ` +
          `${h.stale ? `STALE: last beat ${age(h.beat_age_ms)} ago` : `beat ${age(h.beat_age_ms)} ago`}`,
      )
    }
  }
  lines.push('')
  if (!r.partitions) lines.push(`partitions: no ${Buckets.placement} bucket (no host has placed partitions yet)`)
  else {
    lines.push(`partitions (of ${PARTITIONS} per kind):`)
    const liveIds = new Set(live.map((h) => h.id))
    for (const kind of KINDS) {
      const { held, unheld } = r.partitions[kind]
      const parts = Object.entries(held).map(([host, ps]) => `${host} ${ps.length}${liveIds.has(host) ? '' : ' (not live)'}`)
      if (unheld.length) parts.push(`unheld ${unheld.length}: ${unheld.map(partitionToken).join(' ')}`)
      lines.push(`  ${kind.padEnd(8)} ${parts.join(', ') || 'none'}`)
    }
  }
  lines.push('')
  const counts = Object.entries(r.sessions.by_status)
    .map(([s, n]) => `${n} ${s}`)
    .join(', ')
  lines.push(`sessions: ${r.sessions.total}${counts ? ` (${counts})` : ''}`)
  for (const s of r.sessions.running) {
    const since = s.running_since ? `running ${age(now - s.running_since)}` : 'running'
    lines.push(`  ${s.id}  ${since}  agent ${s.agent_id ?? '?'}  session.${s.partition} on ${s.host ?? 'no host'}`)
  }
  if (r.sessions.running_more) lines.push(`  … and ${r.sessions.running_more} more running`)
  return lines
}

/** 850 ms → "0.9s", 75 s → "1m15s", 2 h → "2h0m". */
function age(ms: number): string {
  const s = Math.max(0, ms) / 1000
  if (s < 60) return `${s.toFixed(1)}s`
  if (s < 3600) return `${Math.floor(s / 60)}m${Math.floor(s % 60)}s`
  return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`
}
