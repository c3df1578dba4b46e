// The printed report: what ran, the fault timeline, load figures inside and outside the fault windows, failover
// and restart timings, then each check with its evidence. Plain text, one screen per section.
import type { ChaosArgs } from './args.js'
import { HOST_FAILOVER_MS, failoverStats, inFault, killStats, percentile, sandboxHostLosses, type CheckResult, type RunData } from './checks.js'
import { memorySummary } from './memories.js'
import { mcpSummary } from './mcp.js'
import { IN_FLIGHT_END_MS } from './sandbox-kills.js'
import { CONNECT_FAILED, TIMED_OUT } from './types.js'

const s1 = (ms: number | undefined) => (ms === undefined ? '–' : `${(ms / 1000).toFixed(1)} s`)
const defined = (xs: Array<number | undefined>) => xs.filter((x): x is number => x !== undefined)
const ms0 = (ms: number | undefined) => (ms === undefined ? '–' : `${ms.toFixed(0)} ms`)

export function printReport(args: ChaosArgs, d: RunData, checks: CheckResult[], runDir: string): void {
  const rel = (t: number) => `${((t - d.loadStart) / 1000).toFixed(1)} s`
  const out: string[] = []
  const say = (line = '') => out.push(line)
  const loadSeconds = (d.loadEnd - d.loadStart) / 1000

  say()
  say(
    `chaos report: seed ${args.seed}, ${args.seconds} s of load, ${args.sessions} sessions (${args.readers} with SSE readers), ${args.hosts} hosts, ` +
      `${args.sandboxHosts ? `${args.sandboxHosts} sandbox hosts (TROUPE_SANDBOX_PLACEMENT=remote), ` : ''}3-node NATS cluster`,
  )
  say(`  faults drawn from: ${args.faults.length ? args.faults.join(', ') : 'none (--no-faults)'}`)
  say(`  run directory: ${runDir}`)

  say()
  say('faults (one at a time; nats-stop is a SIGSTOP of one nats-server for 10 s, standing in for a network partition)')
  if (!d.windows.length) say('  none')
  d.windows.forEach((w, i) => {
    const probes = w.probes.map((p) => p.firstOkMs).filter((x): x is number => x !== undefined)
    const client = w.probes.map((p) => p.clientMs).filter((x): x is number => x !== undefined)
    say(
      `  ${String(i + 1).padStart(2)}. ${w.kind.padEnd(13)} ${w.target.padEnd(3)} ${rel(w.start).padStart(7)} → ${rel(w.end).padStart(7)} (${s1(w.end - w.start)})` +
        `  ${w.probe} probes ${probes.length}/${w.probes.length} ok, first ok p50 ${s1(percentile(probes, 50))} max ${s1(probes.length ? Math.max(...probes) : undefined)}` +
        (w.probe === 'write'
          ? `; client ${client.length}/${w.probes.length} ok, p50 ${s1(percentile(client, 50))} max ${s1(client.length ? Math.max(...client) : undefined)}`
          : '') +
        (w.error ? `  ERROR ${w.error}` : ''),
    )
    for (const st of w.steps) say(`        ${rel(st.at).padStart(7)}  ${st.what}`)
  })

  say()
  say('load')
  const done = d.turns.filter((t) => t.outcome === 'done')
  const byKind = (k: string) => d.turns.filter((t) => t.kind === k).length
  say(
    `  turns        ${done.length} done, ${d.turns.filter((t) => t.outcome === 'timeout').length} timed out, ${d.turns.filter((t) => t.outcome === 'error').length} failed` +
      ` (${(done.length / loadSeconds).toFixed(2)} turns/s over ${loadSeconds.toFixed(0)} s); bash ${byKind('bash')}, custom ${byKind('custom')}, interrupt ${byKind('interrupt')}`,
  )
  const turnMs = done.map((t) => t.end - t.start)
  say(`  turn time    p50 ${ms0(percentile(turnMs, 50))}, p99 ${ms0(percentile(turnMs, 99))}`)
  const retries = d.attempts.filter((a) => a.retry > 0).length
  say(
    `  POSTs        ${d.posts.length} (${d.posts.filter((p) => p.ok).length} acknowledged); ${d.attempts.length} HTTP attempts in all, ${retries} of them client retries`,
  )
  const inside = d.calls.filter((c) => inFault(d.windows, c.at, c.at + c.ms))
  const outside = d.calls.filter((c) => !inFault(d.windows, c.at, c.at + c.ms))
  const lat = (cs: typeof d.calls) =>
    `${cs.length} calls, p50 ${ms0(
      percentile(
        cs.map((c) => c.ms),
        50,
      ),
    )}, p99 ${ms0(
      percentile(
        cs.map((c) => c.ms),
        99,
      ),
    )}, ${cs.filter((c) => !c.ok).length} failed`
  if (d.windows.length) {
    say(`  requests     outside fault windows: ${lat(outside)}`)
    say(`               inside fault windows (+5 s): ${lat(inside)}`)
  } else say(`  requests     ${lat(d.calls)}`)
  // Per client: probes time out on purpose (overlapping short attempts), the driver's statuses are the load's.
  const byClient = new Map<string, Map<string, number>>()
  for (const a of d.attempts) {
    const k = a.status === CONNECT_FAILED ? 'connection failed' : a.status === TIMED_OUT ? 'timeout' : String(a.status)
    const m = byClient.get(a.client) ?? new Map<string, number>()
    byClient.set(a.client, m.set(k, (m.get(k) ?? 0) + 1))
  }
  let first = true
  for (const c of ['driver', 'sse', 'probe', 'failover', 'check', 'memory', 'other']) {
    const m = byClient.get(c)
    if (!m) continue
    say(
      `  ${first ? 'statuses    ' : '            '} ${c.padEnd(6)} ${[...m]
        .sort()
        .map(([k, n]) => `${k}: ${n}`)
        .join(', ')}`,
    )
    first = false
  }
  const connects = d.readers.reduce((n, r) => n + r.connects, 0)
  say(`  SSE readers  ${d.readers.length} readers, ${connects} connections, ${d.readers.reduce((n, r) => n + r.ids.length, 0)} events received`)
  if (d.memories) say(`  memories     ${memorySummary(d.memories)}`)
  if (d.mcp) say(`  mcp          ${mcpSummary(d.mcp)}`)

  if (d.windows.length) {
    say()
    say(
      "failover (fault → first successful probe of each session the fault touched: the faulted host's sessions, or the first 8 for NATS; " +
        'a write for a host SIGKILL, an events read otherwise)',
    )
    for (const f of failoverStats(d)) {
      if (!f.faults) continue
      say(
        `  ${f.label.padEnd(18)} ${f.faults} fault(s), ${f.probes} probes: p50 ${s1(f.p50)}, max ${s1(f.max)}${f.never ? `, ${f.never} never` : ''} (budget ${s1(f.budgetMs)})`,
      )
    }
    const kills = killStats(d)
    if (kills.length) {
      say(
        'host SIGKILL → every session the host owned answers a write (client: one update per session sent at the SIGKILL through the ' +
          'official client, retrying as it does by itself; raw: one attempt at a time per session, at most every 250 ms, the server side)',
      )
      for (const k of kills) {
        const never = k.client.never + k.raw.never
        say(
          `  ${k.window.target} at ${rel(k.window.start).padStart(7)}: ${String(k.sessions).padStart(2)} sessions, client p50 ${s1(k.client.p50)} max ${s1(k.client.max)}, ` +
            `raw p50 ${s1(k.raw.p50)} max ${s1(k.raw.max)}${never ? `, ${k.client.never} client / ${k.raw.never} raw never` : ''}`,
        )
      }
      const probes = kills.flatMap((k) => k.window.probes)
      const p50 = (xs: Array<number | undefined>) => s1(percentile(defined(xs), 50))
      const range = (xs: Array<number | undefined>) => {
        const ms = defined(xs)
        return ms.length ? `${s1(Math.min(...ms))}–${s1(Math.max(...ms))}` : '–'
      }
      say(
        `  all ${kills.length} kill(s): client p50 ${p50(probes.map((p) => p.clientMs))}, per-kill max ${range(kills.map((k) => k.client.max))}; ` +
          `raw p50 ${p50(probes.map((p) => p.firstOkMs))}, per-kill max ${range(kills.map((k) => k.raw.max))} (budget ${s1(HOST_FAILOVER_MS)})`,
      )
    }
    if (d.sandboxKills.length) {
      say('host SIGKILL → what the host left (seen from the others while it was down)')
      for (const [i, k] of d.sandboxKills.entries()) {
        const left = k.survivors.length ? `${k.survivors.length} LEFT RUNNING` : `none left (${k.goneMs} ms)`
        say(`  ${String(i + 1).padStart(2)}. ${k.host}: ${k.sandboxes} sandboxes (${k.processes} processes) → ${left}`)
      }
      const ok = d.probeChecks.filter((c) => c.ok).length
      say(
        `  probe sessions read their workspace back on the host that took them over: ${ok} of ${d.probeChecks.length} (${d.probeChecks.filter((c) => c.restored).length} restored from the store there)`,
      )
      const by = (o: string) => d.uploads.filter((u) => u.outcome === o).length
      say(
        `  uploads streaming into the killed host: ${d.uploads.length}: ${by('whole')} whole, ${by('absent')} absent, ${by('partial')} partial, ${by('unknown')} unknown`,
      )
    }
    if (d.sandboxHostKills.length) {
      say('sandbox host SIGKILL → what it left (seen while it was down)')
      for (const [i, k] of d.sandboxHostKills.entries()) {
        const left = k.survivors.length ? `${k.survivors.length} LEFT RUNNING` : `none left (${k.goneMs} ms)`
        const flights = d.inFlight.filter((c) => c.victim === k.host && c.onVictim)
        say(`  ${String(i + 1).padStart(2)}. ${k.host}: ${k.sandboxes} sandboxes (${k.processes} processes) → ${left}`)
        for (const c of flights)
          say(`        call in flight in ${c.session}: ${c.ok ? 'error result' : 'NOT an error result'}, turn over ${s1(c.endedMs)} after the kill`)
      }
      const judged = d.inFlight.filter((c) => c.onVictim)
      const ended = defined(judged.map((c) => c.endedMs))
      say(
        `  calls in flight at the kill: ${judged.length}, ${judged.filter((c) => c.ok).length} ended with an error result; turn over p50 ${s1(percentile(ended, 50))}, ` +
          `max ${s1(ended.length ? Math.max(...ended) : undefined)} (bound ${s1(IN_FLIGHT_END_MS)})`,
      )
      const probes = d.probeChecks.filter((c) => c.kind === 'sandbox-host')
      say(
        `  probe sessions read their workspace back while it was down: ${probes.filter((c) => c.ok).length} of ${probes.length} ` +
          `(${probes.filter((c) => c.restored).length} restored from the store, ${probes.filter((c) => c.ok && c.attempts > 1).length} at a later attempt)`,
      )
      const first = probes.find((c) => c.firstFailure)?.firstFailure
      if (first) say(`    a first attempt refused: ${first.slice(0, 160)}`)
      for (const s of d.sandboxHostStarts.filter((x) => x.restart))
        say(
          `  ${s.host} restarted at ${rel(s.spawnAt)}: ready ${ms0(s.readyAt !== undefined ? s.readyAt - s.spawnAt : undefined)} after spawn${s.error ? `  ERROR ${s.error}` : ''}`,
        )
    }
    const restarts = d.hostStarts.filter((s) => s.restart)
    if (restarts.length) {
      say('restarts (spawn → start-up block printed; NATS connection → /readyz 200)')
      for (const s of restarts) {
        const from = s.natsAt ?? s.blockAt
        say(
          `  ${s.host} at ${rel(s.spawnAt)}: spawn → block ${s1(s.blockAt !== undefined ? s.blockAt - s.spawnAt : undefined)}, ` +
            `${s.natsAt ? 'NATS connection' : 'block'} → ready ${ms0(s.readyAt !== undefined && from !== undefined ? s.readyAt - from : undefined)}${s.notReady ? ` (not ready before: ${s.notReady})` : ''}${s.error ? `  ERROR ${s.error}` : ''}`,
        )
      }
    }
  }

  if (args.sandboxHosts) {
    const lost = sandboxHostLosses(d)
    say()
    say(
      `sandbox hosts given up by a tool result: ${lost.kill} around a sandbox host SIGKILL, ${lost.fault} inside other fault windows, ` +
        `${lost.outside.length} outside any (a sandbox host taken for lost while it ran)`,
    )
    for (const l of lost.outside.slice(0, 5)) say(`  ${l}`)
  }

  say()
  say('checks')
  for (const c of checks) {
    say(`  ${c.ok ? 'PASS' : 'FAIL'}  ${c.name}: ${c.summary}`)
    for (const line of c.details) say(`          ${line}`)
  }
  const failed = checks.filter((c) => !c.ok).length
  say()
  say(
    failed
      ? `chaos: ${failed} of ${checks.length} checks FAILED (seed ${args.seed}; logs in ${runDir})`
      : `chaos: all ${checks.length} checks passed (seed ${args.seed})`,
  )
  console.log(out.join('\n'))
}
