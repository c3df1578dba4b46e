import { Buckets } from '../../../protocol/subjects.js'
import type { EndpointView, FanOutView, WebhooksView } from './webhooks.js'
import { count, emptyHeading, gapLines, when } from './text.js'

/** The webhooks section, as lines. */
export function webhookLines(w: WebhooksView, now: number): string[] {
  const queue =
    w.queued === null
      ? 'no deliveries stream yet'
      : `${count(w.queued, 'delivery', 'deliveries')} stored, ${w.in_flight ?? '?'} of them claimed (attempting or waiting for a retry)`
  const lines = [
    w.total === 0
      ? emptyHeading('webhooks', Buckets.webhooks, w.gaps)
      : `webhooks: ${count(w.total, 'endpoint')} (${w.enabled} enabled, ${w.disabled} disabled); ${queue}; ${w.failing} failing`,
  ]
  for (const e of w.listed) lines.push(`  ${endpointLine(e, now)}`)
  if (w.more) lines.push(`  … and ${w.more} more`)
  if (w.fan_out.length === 0) {
    lines.push(
      `  fan-out: ${w.gaps.missing.includes(Buckets.webhookFanOut) ? `no ${Buckets.webhookFanOut} bucket yet (no host with a keyring has started)` : 'no positions yet'}`,
    )
  } else {
    for (const reading of ['source', 'audit'] as const) {
      const of = w.fan_out.filter((f) => f.reading === reading)
      if (of.length) lines.push(`  ${reading === 'source' ? 'fan-out' : 'audit (a minute behind by design)'}: ${lagLine(of)}`)
    }
  }
  lines.push(...gapLines(w.gaps, [Buckets.webhooks, Buckets.webhookFanOut]))
  return lines
}

function endpointLine(e: EndpointView, now: number): string {
  const parts = [e.id, e.status === 'enabled' ? 'enabled' : e.disabled_reason ? `DISABLED (${e.disabled_reason})` : 'DISABLED', e.url, `backlog ${e.backlog}`]
  const f = e.failing
  parts.push(f ? `FAILING since ${when(f.since, now)}: ${f.failures} failed attempt${f.failures > 1 ? 's' : ''}, last ${f.last}` : 'not failing')
  return parts.join('  ')
}

/** "lag TROUPE_EVENTS 0, TROUPE_OUTBOX 3, …; each read under a live lease" */
function lagLine(of: FanOutView[]): string {
  const lags = of.map((f) => `${f.stream} ${f.last_seq === null ? '(no stream yet)' : f.lag}`).join(', ')
  // Holders are readers' own ids (one per source and orchestrator), which name no process: whether one holds is what tells.
  const unread = of.filter((f) => f.lease !== 'live').map((f) => f.stream)
  const who =
    unread.length === 0
      ? 'each read under a live lease'
      : unread.length === of.length
        ? 'NO READER (no `troupe orchestrate` or `troupe start` with a keyring holds a lease)'
        : `no reader of ${unread.join(', ')}`
  return `lag ${lags}; ${who}`
}
