import { changedCanaries, createCanaries, createVictims } from './canaries.js'
import { judge } from './checks.js'
import { readLoopStall, readMemory } from '../helpers/loop-stall.js'
import {
  problemLines,
  get,
  logLines,
  partitionChanges,
  rssMiB,
  settledLogLines,
  startServer,
  threadCount,
  waitReady,
  watchPeakRss,
  type Server,
} from './harness.js'
import { describeOutcome, describeSpec, formatSummary, type Summary } from './report.js'
import { buildSpec, schedule } from './schedule.js'
import { Tally } from './tally.js'
import type { Failure, HttpTransport, Outcome, Spec } from './types.js'
import { exchange, frame } from './wire.js'
import { highCardinality, parsePromText } from '../helpers/prom-text.js'

export interface FuzzOptions {
  seed: number
  requests: number
  /** Requests in flight at once. */
  concurrency?: number
  /** Sets TROUPE_HTTP for the server; unset leaves the server's default (uWS). */
  http?: HttpTransport
  /** Replay only these request indices (of the same seed and request count), printing each in full. */
  only?: number[]
  /** Print every request and its status as it completes. */
  verbose?: boolean
  /** Classes not to send (their slots stay, so indices and replays keep their meaning): to get past a known crash. */
  skip?: string[]
  /** How long a well-formed request may go unanswered. */
  timeoutMs?: number
  /** How long after the last answer to measure the server's RSS again (what it gives back). Default 30; 0 skips it. */
  settleSeconds?: number
  log?: (line: string) => void
}

export interface FuzzResult {
  ok: boolean
  failures: Failure[]
  summary: Summary
  text: string
}

// Malformed exchanges often leave the parser waiting for bytes that never come: do not wait long for them.
const RAW_TIMEOUT_MS = 2_000
// After a first answer, how long to keep listening for a body sent on HEAD or a pipelined second answer.
const SETTLE_MS = 150

/**
 * One fuzz run: a fresh server, canaries and victims, then the scheduled hostile requests (`concurrency` at
 * a time), then the end checks. Never throws for what the server does; only for a broken setup.
 */
export async function runFuzz(opts: FuzzOptions): Promise<FuzzResult> {
  const log = opts.log ?? ((l: string) => console.log(l))
  const concurrency = opts.concurrency ?? 8
  const transport: HttpTransport = opts.http ?? ((process.env.TROUPE_HTTP as HttpTransport | undefined) === 'node' ? 'node' : 'uws')
  const replay = `npm run fuzz -- --seed ${opts.seed} --requests ${opts.requests}${opts.http ? ` --http ${opts.http}` : ''}${opts.skip?.length ? ` --skip ${opts.skip.join(',')}` : ''}${process.env.FUZZ_ROUTES ? ` --routes ${process.env.FUZZ_ROUTES}` : ''}`
  const t0 = performance.now()

  const server = await startServer(opts.http)
  try {
    return await fuzz(server, opts, { log, concurrency, transport, replay, t0 })
  } finally {
    await server.stop()
  }
}

/** Waits up to `ms` for the server process to be reported gone. */
async function exited(server: Server, ms: number): Promise<boolean> {
  for (let waited = 0; waited < ms && !server.died(); waited += 50) await new Promise((r) => setTimeout(r, 50))
  return server.died() !== undefined
}

interface RunContext {
  log: (line: string) => void
  concurrency: number
  transport: HttpTransport
  replay: string
  t0: number
}

async function fuzz(server: Server, opts: FuzzOptions, ctx: RunContext): Promise<FuzzResult> {
  const { log } = ctx
  await waitReady(server.url)
  const canaries = await createCanaries(server.url)
  const victims = await createVictims(server.url)
  // Placement claimed everything before /readyz said 200; let a pass that was in flight log its line.
  await new Promise((r) => setTimeout(r, 500))
  const changesBefore = partitionChanges(logLines(server.troupe)).length
  const rssBefore = rssMiB(server.pid)
  const threadsBefore = threadCount(server.pid)
  const peakRss = watchPeakRss(server.pid)
  // Start-up (module loading, the first JetStream calls) is not what the run measures: start the probe over.
  await readLoopStall(server.troupe).catch(() => undefined)
  log(`fuzz: server ${server.url} (pid ${server.pid}, transport ${ctx.transport}); seed ${opts.seed}, ${opts.requests} requests`)

  const slots = schedule(opts.seed, opts.requests)
  const indices = opts.only ?? slots.map((_, i) => i)
  for (const i of indices) if (!slots[i]) throw new Error(`--only ${i}: the run has requests 0 to ${slots.length - 1}`)

  const failures: Failure[] = []
  const tally = new Tally(ctx.transport)
  const inFlight = new Map<number, Spec>()
  /** Requests that were cut off by the server's death: one of them (or one still in flight) killed it. */
  const suspects = new Map<number, Spec>()
  const startedAt = new Map<number, number>()

  const one = async (index: number) => {
    const spec = buildSpec(opts.seed, index, slots[index]!, victims)
    inFlight.set(index, spec)
    startedAt.set(index, performance.now())
    const writes = spec.kind === 'http' ? frame(spec, server.port) : spec.writes
    const isHead = spec.method.toUpperCase() === 'HEAD'
    const send = () =>
      exchange(server.port, writes, {
        method: spec.method,
        hangUp: spec.kind === 'raw' && spec.hangUp,
        timeoutMs: spec.kind === 'raw' ? RAW_TIMEOUT_MS : (opts.timeoutMs ?? 20_000),
        settleMs: spec.kind === 'raw' || isHead ? SETTLE_MS : 0,
      })
    let outcome = await send()
    // A 503 with a retry delay is the server asking to be asked again (a heartbeat that a loaded machine delayed,
    // a store that did not answer), and the official client does so. Do the same once: a 503 the input caused
    // answers 503 again; one that answers on the retry is counted, shown in the report, and not a failure.
    const delay = retryDelay(outcome)
    if (spec.kind === 'http' && delay !== undefined) {
      await new Promise((r) => setTimeout(r, Math.min(delay, 2000)))
      const again = await send()
      if (!judge(spec, again, ctx.transport).problems.length) {
        tally.retried()
        outcome = again
      }
    }
    // A connection refused, reset or closed unanswered may be the server dying (this request may be what
    // killed it): then the death is the finding, and this request one of its suspects.
    if (
      (outcome.kind === 'reset' || outcome.kind === 'closed') &&
      (await exited(server, outcome.kind === 'reset' && outcome.error === 'ECONNREFUSED' ? 2000 : 500))
    ) {
      inFlight.delete(index)
      if (!(outcome.kind === 'reset' && outcome.error === 'ECONNREFUSED')) suspects.set(index, spec)
      tally.cutOff()
      return
    }
    inFlight.delete(index)
    if (outcome.kind === 'timeout' && spec.kind === 'http') await probe(index)
    const verdict = judge(spec, outcome, ctx.transport)
    tally.record(spec, outcome, verdict)
    for (const p of verdict.problems) {
      failures.push({
        index,
        class: spec.class,
        route: spec.route,
        note: spec.note,
        rule: p.rule,
        status: verdict.bucket,
        detail: p.detail,
        request: describeSpec(spec, server.port),
        response: describeOutcome(outcome),
      })
    }
    const ms = Math.round(performance.now() - startedAt.get(index)!)
    if (opts.only)
      log(
        `#${index} ${describeSpec(spec, server.port)}\n→ (${ms} ms) ${describeOutcome(outcome)}\n${verdict.problems.map((p) => `FAIL [${p.rule}] ${p.detail}`).join('\n') || 'ok'}\n`,
      )
    else if (opts.verbose)
      log(
        `#${index} ${verdict.bucket.padEnd(8)} ${String(ms).padStart(6)} ms ${spec.class} ${spec.kind === 'http' ? `${spec.method} ${spec.target.slice(0, 80)}` : ''} ${spec.note.slice(0, 80)}`,
      )
  }

  // A request left unanswered may mean the whole server is stuck: if /healthz does not answer either, stop
  // there (every further request would wait out its timeout too) and say so.
  let unresponsive: string | undefined
  let probing: Promise<void> | undefined
  const probe = (after: number) =>
    (probing ??= get(server.url, '/healthz', 30_000).then((r) => {
      if (r.status !== 200 && !server.died()) unresponsive = `/healthz did not answer within 30 s after request #${after} timed out (${r.text})`
      probing = undefined
    }))

  // A pool of workers over one queue: the order requests start in is the schedule's, whatever the timing.
  let next = 0
  let done = 0
  let lastProgress = performance.now()
  const worker = async () => {
    while (next < indices.length && !server.died() && !unresponsive) {
      const index = indices[next++]!
      if (opts.skip?.includes(slots[index]!.class)) continue
      await one(index)
      done++
      if (!opts.verbose && !opts.only && performance.now() - lastProgress > 10_000) {
        lastProgress = performance.now()
        log(`  … ${done}/${indices.length} requests, ${failures.length} failures`)
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(ctx.concurrency, indices.length) }, worker))
  const lastAnswer = performance.now()

  // End checks: the process, readiness, the canaries, placement.
  const death = server.died()
  if (death) {
    for (const [i, spec] of inFlight) suspects.set(i, spec)
    // Latest started first: exchanges the parser had left waiting for bytes are cut off too, but started earlier.
    const list = [...suspects.keys()].sort((a, b) => startedAt.get(b)! - startedAt.get(a)!)
    // With one request at a time the death names its one suspect.
    const replayOne = list.length ? `; replay them one at a time to find which: ${ctx.replay} --only ${list.join(',')} --concurrency 1` : ''
    failures.push({
      index: list.length === 1 ? list[0] : undefined,
      class: 'run',
      route: '-',
      rule: 'server died',
      detail: `the server ${death}; requests cut off by it, latest started first: ${list.map((i) => `#${i}`).join(', ') || 'none'}${replayOne}`,
      request: list
        .slice(0, 4)
        .map((i) => `#${i} ${describeSpec(suspects.get(i)!, server.port)}`)
        .join('\n'),
      response: server.troupe
        .logs()
        .split('\n')
        .filter((l) => !l.startsWith('{'))
        .slice(-15)
        .join('\n'),
    })
  } else if (unresponsive) {
    failures.push({ index: undefined, class: 'run', route: '-', rule: 'server unresponsive', detail: `${unresponsive}; the run stopped there` })
  } else {
    const ready = await get(server.url, '/readyz')
    if (ready.status !== 200)
      failures.push({ index: undefined, class: 'run', route: 'GET /readyz', rule: 'not ready at the end', detail: `${ready.status} ${ready.text}` })
    // Hostile methods and paths leave no series of their own: /metrics still parses, and no label names an id.
    const metrics = await get(server.url, '/metrics')
    let found: string[] = []
    try {
      found = highCardinality(parsePromText(metrics.text))
    } catch (err) {
      found = [(err as Error).message]
    }
    if (metrics.status !== 200 || found.length)
      failures.push({
        index: undefined,
        class: 'run',
        route: 'GET /metrics',
        rule: 'metrics unreadable',
        detail: `${metrics.status} ${found.slice(0, 5).join('; ')}`,
      })
    for (const c of await changedCanaries(server.url, canaries)) {
      failures.push({
        index: undefined,
        class: 'run',
        route: `GET ${c.path}`,
        rule: 'canary changed',
        detail: `before: ${c.before.slice(0, 600)}\n  after:  ${c.after.slice(0, 600)}`,
      })
    }
  }
  const lines = await settledLogLines(server.troupe)
  const changes = partitionChanges(lines)
  if (changes.length > changesBefore) {
    failures.push({
      index: undefined,
      class: 'run',
      route: '-',
      rule: 'partitions changed',
      detail: changes
        .slice(changesBefore)
        .map((l) => JSON.stringify(l))
        .join('\n  '),
    })
  }
  // An error-level line is something the server did not expect (an actor that failed on its own input, an
  // unhandled rejection): a finding even when every answer looked right, as when a 503 was retried away.
  const errors = lines.filter((l) => typeof l.level === 'number' && l.level >= 50)
  if (errors.length) {
    failures.push({
      index: undefined,
      class: 'run',
      route: '-',
      rule: 'server logged errors',
      detail: errors
        .slice(0, 5)
        .map((l) => JSON.stringify(l).slice(0, 400))
        .join('\n  '),
    })
  }

  const rssPeak = peakRss.stop()
  const rssAfter = rssMiB(server.pid)
  const stallMs = (await readLoopStall(server.troupe).catch(() => undefined))?.max
  // What the server gives back once idle (parse workers exit after 10 s idle, and the gateway collects its garbage).
  const settleSeconds = opts.settleSeconds ?? 30
  let settled: Summary['settled']
  if (settleSeconds > 0 && !server.died()) {
    await new Promise((r) => setTimeout(r, Math.max(0, lastAnswer + settleSeconds * 1000 - performance.now())))
    const memory = await readMemory(server.troupe).catch(() => undefined)
    settled = { seconds: settleSeconds, rss: rssMiB(server.pid), threads: threadCount(server.pid), memory }
  }

  const summary: Summary = {
    seed: opts.seed,
    requests: indices.length,
    transport: ctx.transport,
    concurrency: ctx.concurrency,
    seconds: (performance.now() - ctx.t0) / 1000,
    byClass: tally.byClass,
    statuses: tally.statuses,
    retried: tally.retriedCount,
    parserByCase: tally.parserByCase,
    rssBefore,
    rssPeak,
    rssAfter,
    threadsBefore,
    settled,
    stallMs,
    errors: problemLines(lines),
    failures,
    replay: ctx.replay,
  }
  const text = formatSummary(summary)
  return { ok: failures.length === 0, failures, summary, text }
}

/** The delay a 503 asks for (`retry-after-ms`, else `retry-after` in seconds), or undefined for any other answer. */
function retryDelay(o: Outcome): number | undefined {
  if (o.kind !== 'response' || o.response.status !== 503) return undefined
  const ms = Number(o.response.headers['retry-after-ms'] ?? Number(o.response.headers['retry-after']) * 1000)
  return Number.isFinite(ms) && ms >= 0 ? ms : undefined
}
