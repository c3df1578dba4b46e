import { Buckets, PARTITIONS, partitionToken } from '../../../protocol/subjects.js'
import { keyringConflict, kindsLeft } from '../../cluster-config.js'
import { type ClusterView, KINDS } from './cluster.js'
import { age } from './text.js'

/** Hosts, sandbox hosts, partitions and sessions, as lines. */
export function clusterLines(r: ClusterView, now: number): string[] {
  const lines: string[] = []
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
  lines.push(`sessions: ${r.sessions.total || 'none yet'}${counts ? ` (${counts})` : ''}`)
  for (const s of r.sessions.running) {
    const since = s.running_since ? `running ${age(now - s.running_since)}` : 'running'
    lines.push(`  ${s.id}  ${since}  agent ${s.agent_id ?? '?'}  session.${s.partition} on ${s.host ?? 'no host'}`)
  }
  if (r.sessions.running_more) lines.push(`  … and ${r.sessions.running_more} more running`)
  return lines
}
