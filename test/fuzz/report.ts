import { wellFormed } from './checks.js'
import type { ProbedMemory } from '../helpers/loop-stall.js'
import type { ClassName, Failure, HttpTransport, Outcome, Spec } from './types.js'

const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n)}… (${s.length} chars)` : s)
const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`

/** The request, readable, with a curl line when curl can send it byte for byte. */
export function describeSpec(spec: Spec, port: number): string {
  if (spec.kind === 'raw') {
    const bytes = Buffer.concat(spec.writes.map((w) => w.bytes))
    const split = spec.writes.length > 1 ? ` in ${spec.writes.length} writes` : ''
    return [
      `raw HTTP: ${spec.note} (expect ${spec.expect}${spec.hangUp ? ', hang up after sending' : ''})`,
      `  bytes (${bytes.length}${split}): ${clip(JSON.stringify(bytes.toString('latin1')), 400)}`,
    ].join('\n')
  }
  const lines = [`${JSON.stringify(spec.method).slice(1, -1)} ${clip(JSON.stringify(spec.target), 300)}  [${spec.class}: ${spec.note}]`]
  if (spec.headers.length)
    lines.push(`  headers: ${spec.headers.map(([k, v]) => `${k}: ${v}`).join('; ')}${spec.chunked ? '; transfer-encoding: chunked' : ''}`)
  if (spec.body) lines.push(`  body (${spec.body.length} bytes): ${clip(JSON.stringify(spec.body.subarray(0, 400).toString('utf8')), 400)}`)
  const body = spec.body?.toString('utf8')
  const curlable =
    wellFormed(spec) &&
    spec.method !== 'HEAD' &&
    !spec.chunked &&
    (body === undefined || (spec.body!.length <= 2000 && Buffer.from(body).equals(spec.body!) && !/[\0\r\n]/.test(body)))
  if (curlable) {
    const parts = ['curl -si --path-as-is', '-X', q(spec.method), q(`http://127.0.0.1:${port}${spec.target}`)]
    for (const [k, v] of spec.headers) parts.push('-H', q(`${k}: ${v}`))
    if (body !== undefined) parts.push('--data-binary', q(body))
    lines.push(`  curl: ${parts.join(' ')}`)
  }
  return lines.join('\n')
}

export function describeOutcome(o: Outcome): string {
  switch (o.kind) {
    case 'hung-up':
      return 'we hung up (no answer expected)'
    case 'response': {
      const r = o.response
      const extra = o.more.length ? `\n  + ${o.more.length} pipelined answer(s): ${o.more.map((m) => m.status).join(', ')}` : ''
      const trailing = o.trailing.length ? `\n  + ${o.trailing.length} trailing bytes` : ''
      return `  ${r.head.split('\r\n').join('\n  ')}\n  body: ${clip(JSON.stringify(r.body.subarray(0, 600).toString('utf8')), 600)}${extra}${trailing}`
    }
    default:
      return `${o.kind}${o.kind === 'reset' ? ` (${o.error})` : ''} after ${o.partial.length} bytes: ${clip(JSON.stringify(o.partial.subarray(0, 300).toString('latin1')), 300)}`
  }
}

export interface ClassStats {
  sent: number
  parser: number
  unanswered: number
  failed: number
}

export interface Summary {
  seed: number
  requests: number
  transport: HttpTransport
  concurrency: number
  seconds: number
  byClass: Map<ClassName, ClassStats>
  statuses: Map<string, number>
  parserByCase: Map<string, string[]>
  /** Server RSS in MiB: before the first hostile request, the highest sample during the run, at the end checks. */
  rssBefore: number | undefined
  rssPeak: number | undefined
  rssAfter: number | undefined
  threadsBefore: number | undefined
  /** The server measured again `seconds` after the last answer (what it gave back once idle). */
  settled?: { seconds: number; rss: number | undefined; threads: number | undefined; memory: ProbedMemory | undefined }
  stallMs: number | undefined
  /** 503s that answered on one retry (not failures; a loaded machine delays heartbeats). */
  retried: number
  /** Server log lines at warn level and up, by message. */
  errors: Map<string, number>
  failures: Failure[]
  /** The replay command without --only. */
  replay: string
}

const pad = (s: string | number, n: number) => String(s).padEnd(n)
const padL = (s: string | number, n: number) => String(s).padStart(n)
const mib = (x: number | undefined) => (x === undefined ? '?' : x.toFixed(1))

/**
 * Failures that share a rule, class and status are one finding, shown once with the routes and the hostile
 * parts it was seen with (one bug usually shows on many routes).
 */
export function groupFailures(failures: Failure[]): Array<{ key: string; items: Failure[] }> {
  const by = new Map<string, Failure[]>()
  for (const f of failures) {
    const key = `[${f.rule}] ${f.class}${f.status ? ` → ${f.status}` : ''}`
    by.set(key, [...(by.get(key) ?? []), f])
  }
  return [...by].map(([key, items]) => ({ key, items })).sort((a, b) => b.items.length - a.items.length)
}

const distinct = (xs: Array<string | undefined>, max: number) => {
  const all = [...new Set(xs.filter((x): x is string => !!x))]
  return all.slice(0, max).join('; ') + (all.length > max ? `; … (${all.length} in all)` : '')
}

export function formatSummary(s: Summary): string {
  const out: string[] = []
  out.push(`fuzz: seed ${s.seed}, ${s.requests} requests, transport ${s.transport}, ${s.concurrency} in flight, ${s.seconds.toFixed(1)} s`)
  out.push('', `${pad('class', 18)} ${padL('sent', 6)} ${padL('parser', 7)} ${padL('no answer', 10)} ${padL('failed', 7)}`)
  for (const [c, st] of s.byClass) out.push(`${pad(c, 18)} ${padL(st.sent, 6)} ${padL(st.parser, 7)} ${padL(st.unanswered, 10)} ${padL(st.failed, 7)}`)
  const statuses = [...s.statuses].sort(([a], [b]) => a.localeCompare(b))
  out.push('', `statuses: ${statuses.map(([k, n]) => `${k}: ${n}`).join(', ')}`)
  if (s.retried) out.push(`503s that answered on the client's retry: ${s.retried}`)
  if (s.parserByCase.size) {
    out.push('parser answers (uWS answered or hung up without reaching our routes; not failures under uWS):')
    for (const [what, statuses] of s.parserByCase) out.push(`  ${clip(what, 90)}: ${statuses.join(', ')}`)
  }
  const growth = (x: number | undefined) =>
    s.rssBefore !== undefined && x !== undefined ? ` (${x >= s.rssBefore ? '+' : ''}${(x - s.rssBefore).toFixed(1)})` : ''
  const settled = s.settled ? `, ${s.settled.seconds} s after ${mib(s.settled.rss)}${growth(s.settled.rss)}` : ''
  out.push('', `server RSS MiB: before ${mib(s.rssBefore)}, peak ${mib(s.rssPeak)}, at the end ${mib(s.rssAfter)}${growth(s.rssAfter)}${settled}`)
  if (s.settled) {
    const m = s.settled.memory
    const main = m
      ? `main thread heap ${mib(m.heapUsed)} used of ${mib(m.heapTotal)}, external ${mib(m.external)} (array buffers ${mib(m.arrayBuffers)})`
      : 'main thread not probed'
    out.push(`  ${s.settled.seconds} s after: ${main}; threads ${s.settled.threads ?? '?'} (before the run ${s.threadsBefore ?? '?'})`)
  }
  out.push(`longest event-loop stall: ${s.stallMs === undefined ? 'not measured' : `${s.stallMs} ms`}`)
  if (s.errors.size) {
    out.push(`server warnings and errors: ${[...s.errors.values()].reduce((a, b) => a + b, 0)}`)
    for (const [msg, n] of [...s.errors].sort((a, b) => b[1] - a[1]).slice(0, 12)) out.push(`  ${padL(n, 5)} × ${clip(msg, 200)}`)
  }
  if (!s.failures.length) {
    out.push('', 'no failures')
    return out.join('\n')
  }
  const gs = groupFailures(s.failures)
  out.push('', `FAILURES: ${s.failures.length} in ${gs.length} groups`)
  for (const g of gs) {
    const first = g.items[0]!
    const idx = g.items.map((f) => f.index).filter((i): i is number => i !== undefined)
    out.push('', `${g.key}  ×${g.items.length}${idx.length ? `  (requests ${idx.slice(0, 8).join(', ')}${idx.length > 8 ? ', …' : ''})` : ''}`)
    if (first.class !== 'run') {
      out.push(
        `  routes: ${distinct(
          g.items.map((f) => f.route),
          6,
        )}`,
      )
      out.push(
        `  what:   ${distinct(
          g.items.map((f) => f.note),
          6,
        )}`,
      )
    }
    out.push(`  ${first.detail}`)
    if (first.request) out.push(first.request.replace(/^/gm, '  '))
    if (first.response) out.push(`  answer:\n${first.response.replace(/^/gm, '  ')}`)
    if (first.index !== undefined) out.push(`  replay: ${s.replay} --only ${first.index}`)
  }
  out.push('', `FAIL: replay the run with: ${s.replay}`)
  return out.join('\n')
}
