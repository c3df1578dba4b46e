import type { HostView } from './cluster.js'

/** One host's figures since it started, from its `GET /metrics`; `error` when it did not answer in time. */
export interface HostMetrics {
  id: string
  url: string
  error?: string
  requests: number
  errors_5xx: number
  sse_open: number
  actors_live: number
  mailbox_depth: number
  turns: number
  model_requests: number
  model_errors: number
  tokens: number
  list_cost_usd: number
  tool_runs: number
  tool_errors: number
}

export type MetricFigures = Omit<HostMetrics, 'id' | 'url' | 'error'>

/** The live hosts' metrics, and their sums over the hosts that answered. */
export interface MetricsView {
  hosts: HostMetrics[]
  totals: MetricFigures
}

/** A host that does not answer its `/metrics` within this is shown as not answering. */
const FETCH_MS = 1000

/**
 * Each live host's `GET /metrics` (the hosts with a gateway: their beat names its URL), read at once, within `signal`
 * and FETCH_MS: the one part of `troupe status` that asks the hosts, so a stuck host shows as not answering.
 */
export async function readMetrics(hosts: readonly HostView[], signal: AbortSignal): Promise<MetricsView> {
  const live = hosts.filter((h) => !h.stale && h.http_url)
  const read = await Promise.all(live.map((h) => hostMetrics(h.id, h.http_url!, signal)))
  const totals = zero()
  for (const h of read) {
    if (h.error) continue
    for (const k of Object.keys(totals) as Array<keyof MetricFigures>) totals[k] += h[k]
  }
  return { hosts: read, totals }
}

async function hostMetrics(id: string, url: string, budget: AbortSignal): Promise<HostMetrics> {
  const own = new AbortController()
  const timer = setTimeout(() => own.abort(), FETCH_MS)
  const stop = () => own.abort()
  budget.addEventListener('abort', stop, { once: true })
  try {
    const res = await fetch(`${url}/metrics`, { signal: own.signal })
    if (res.status !== 200) return { id, url, error: `HTTP ${res.status}`, ...zero() }
    return { id, url, ...figures(samples(await res.text())) }
  } catch (err) {
    return { id, url, error: own.signal.aborted ? 'no answer in time' : String((err as Error).message), ...zero() }
  } finally {
    clearTimeout(timer)
    budget.removeEventListener('abort', stop)
  }
}

const zero = (): MetricFigures => ({
  requests: 0,
  errors_5xx: 0,
  sse_open: 0,
  actors_live: 0,
  mailbox_depth: 0,
  turns: 0,
  model_requests: 0,
  model_errors: 0,
  tokens: 0,
  list_cost_usd: 0,
  tool_runs: 0,
  tool_errors: 0,
})

interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

/** The samples of a Prometheus text exposition (comments skipped; a line it cannot read is left out). */
export function samples(text: string): Sample[] {
  const out: Sample[] = []
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)/.exec(line)
    if (!m) continue
    const labels: Record<string, string> = {}
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c))
    out.push({ name: m[1]!, labels, value: Number(m[3]) })
  }
  return out
}

/** What the status shows of one host's samples. */
export function figures(all: readonly Sample[]): MetricFigures {
  const sum = (name: string, match: (l: Record<string, string>) => boolean = () => true) =>
    all.reduce((n, s) => (s.name === name && match(s.labels) && Number.isFinite(s.value) ? n + s.value : n), 0)
  return {
    requests: sum('troupe_http_requests_total'),
    errors_5xx: sum('troupe_http_requests_total', (l) => l.status?.startsWith('5') ?? false),
    sse_open: sum('troupe_sse_streams_open'),
    actors_live: sum('troupe_actors_live'),
    mailbox_depth: sum('troupe_actor_mailbox_depth'),
    turns: sum('troupe_turns_total'),
    model_requests: sum('troupe_model_requests_total'),
    model_errors: sum('troupe_model_requests_total', (l) => l.outcome === 'error'),
    tokens: sum('troupe_model_tokens_total'),
    list_cost_usd: sum('troupe_model_list_cost_usd_total'),
    tool_runs: sum('troupe_tool_runs_total'),
    tool_errors: sum('troupe_tool_runs_total', (l) => l.outcome !== 'ok'),
  }
}

/** The section as lines: a host per line, then the cluster's sums. */
export function metricsLines(m: MetricsView): string[] {
  if (!m.hosts.length) return ['metrics: no live host with a gateway (orchestrators and sandbox hosts serve theirs on TROUPE_METRICS_PORT)']
  const line = (f: MetricFigures) =>
    `requests ${f.requests} (5xx ${f.errors_5xx})  streams ${f.sse_open}  actors ${f.actors_live} (mailbox ${f.mailbox_depth})  ` +
    `turns ${f.turns}  model requests ${f.model_requests} (errors ${f.model_errors})  tokens ${f.tokens}  ` +
    `tools ${f.tool_runs} (not ok ${f.tool_errors})  list cost $${f.list_cost_usd.toFixed(4)}`
  const lines = ['metrics (each live host’s /metrics, since it started):']
  for (const h of m.hosts) lines.push(`  ${h.id}  ${h.error ? `NO ANSWER: ${h.error}` : line(h)}`)
  const answered = m.hosts.filter((h) => !h.error).length
  lines.push(`  cluster (${answered} of ${m.hosts.length} answered)  ${line(m.totals)}`)
  return lines
}
