import type { Verdict } from './checks.js'
import type { ClassStats } from './report.js'
import { CLASSES, type ClassName, type HttpTransport, type Outcome, type Spec } from './types.js'

/** The counts a run reports: per class, per status, and what the HTTP parser answered by itself. */
export class Tally {
  readonly byClass = new Map<ClassName, ClassStats>(CLASSES.map((c) => [c, { sent: 0, parser: 0, unanswered: 0, failed: 0 }]))
  readonly statuses = new Map<string, number>()
  readonly parserByCase = new Map<string, string[]>()
  /** 503s that answered when asked again, as a client would. */
  retriedCount = 0

  constructor(private readonly transport: HttpTransport) {}

  /** A request cut off by the server's death: counted as such, not judged. */
  cutOff(): void {
    this.statuses.set('server gone', (this.statuses.get('server gone') ?? 0) + 1)
  }

  retried(): void {
    this.retriedCount++
  }

  record(spec: Spec, outcome: Outcome, verdict: Verdict): void {
    const st = this.byClass.get(spec.class)!
    st.sent++
    this.statuses.set(verdict.bucket, (this.statuses.get(verdict.bucket) ?? 0) + 1)
    // Valid HTTP the transport did not serve (uWS and HTTP/1.0, split request lines) is worth seeing even
    // when it is not a failure.
    const unserved = spec.kind === 'raw' && spec.expect === 'answer' && this.transport === 'uws' && (verdict.parserAnswer || outcome.kind !== 'response')
    if (verdict.parserAnswer || unserved) {
      if (verdict.parserAnswer) st.parser++
      const what = spec.kind === 'raw' ? `${spec.note}${unserved ? ' (valid HTTP, not served)' : ''}` : `${spec.class}: ${spec.note}`
      this.parserByCase.set(what, [...(this.parserByCase.get(what) ?? []), verdict.bucket.replace('parser ', '')])
    }
    if (outcome.kind === 'closed' || outcome.kind === 'timeout' || outcome.kind === 'reset') st.unanswered++
    if (verdict.problems.length) st.failed++
  }
}
