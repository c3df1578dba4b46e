import type { HttpSpec, HttpTransport, Outcome, ParsedResponse, Spec } from './types.js'

/** What one exchange amounted to. */
export interface Verdict {
  /** The status, or how the exchange ended without one: for the status histogram. */
  bucket: string
  /** Answered by the HTTP parser itself (uWS's HTML 400/431/505, no request-id), not by our routes. */
  parserAnswer: boolean
  problems: Array<{ rule: string; detail: string }>
}

// RFC 9110 token characters: a method made of anything else is malformed HTTP, not an odd method.
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
// Visible ASCII only: anything else on the request line (space, control bytes, raw non-ASCII) is malformed HTTP.
const TARGET = /^[\x21-\x7e]+$/

/** Whether the request line is valid HTTP; if not, the parser may refuse it or hang up, as for raw cases. */
export const wellFormed = (spec: HttpSpec) => TOKEN.test(spec.method) && TARGET.test(spec.target)

/**
 * Judges one exchange. Everything our routes answer must be well-behaved: no 5xx, every 4xx the JSON
 * envelope with a `request-id` header equal to its `request_id`. Under uWS the HTTP parser answers some
 * malformed requests itself (HTML, no request-id): those are counted, not failed. Under the node transport
 * the gateway sees parser errors too, so those answers must be envelopes as well.
 */
export function judge(spec: Spec, outcome: Outcome, transport: HttpTransport): Verdict {
  const problems: Verdict['problems'] = []
  // Malformed HTTP may be refused by the parser or closed without a word; valid HTTP must be answered. The
  // raw cases that are valid after all (HTTP/1.0, a request line split across packets) are beyond uWS's
  // parser: under uWS whatever it does with them is its own answer, counted apart; under node it must serve them.
  const mustAnswer = spec.kind === 'http' ? wellFormed(spec) : spec.expect === 'answer' && transport === 'node'

  if (outcome.kind === 'hung-up') {
    return { bucket: 'hung up', parserAnswer: false, problems }
  }
  if (outcome.kind !== 'response') {
    const bucket = outcome.kind === 'reset' ? `reset (${outcome.error})` : outcome.kind
    if (mustAnswer) {
      problems.push({
        rule: outcome.kind === 'timeout' ? 'no answer in time' : 'no answer',
        detail: `${bucket} after ${outcome.partial.length} bytes${preview(outcome.partial)}`,
      })
    }
    return { bucket, parserAnswer: false, problems }
  }

  const { response, more, trailing } = outcome
  // uWS's own answers carry neither a request-id nor JSON; a JSON answer without a request-id is ours, and wrong.
  const ours = response.headers['request-id'] !== undefined || /json/.test(response.headers['content-type'] ?? '')
  if (!ours && transport === 'uws' && response.status >= 400) return { bucket: `parser ${response.status}`, parserAnswer: true, problems }
  // /readyz answers 503 with its checks by design: the 503 is the finding, its body is not meant as an envelope.
  problems.push(...checkAnswer(response, spec.method, spec.route !== 'GET /readyz'))
  if (spec.kind === 'http' && spec.expect && !spec.expect.includes(response.status)) {
    problems.push({ rule: `not ${spec.expect.join('/')}`, detail: `${response.status}${bodyPreview(response)}` })
  }
  for (const next of more) problems.push(...checkAnswer(next, 'GET').map((p) => ({ ...p, rule: `${p.rule} (pipelined answer)` })))

  if (mustAnswer && spec.kind === 'raw' && 1 + more.length < spec.answers) {
    problems.push({ rule: 'pipelined request unanswered', detail: `${1 + more.length} of ${spec.answers} answers` })
  }
  // Methods are case-sensitive: only an exact HEAD must come without a body (a `head` may be refused with one).
  if (trailing.length && spec.method === 'HEAD') {
    problems.push({ rule: 'body on HEAD', detail: `${trailing.length} bytes after the head${preview(trailing)}` })
  }
  return { bucket: String(response.status), parserAnswer: false, problems }
}

/** The rules for one answer of our routes. */
function checkAnswer(r: ParsedResponse, method: string, envelope = true): Verdict['problems'] {
  const problems: Verdict['problems'] = []
  const rid = r.headers['request-id']
  if (rid === undefined) problems.push({ rule: 'no request-id header', detail: headLine(r) })
  else if ((r.headerCounts['request-id'] ?? 0) > 1) problems.push({ rule: 'request-id header repeated', detail: rid })
  if (r.status >= 500) problems.push({ rule: '5xx', detail: `${r.status}${bodyPreview(r)}` })
  // A HEAD answer has no body to hold an envelope: its request-id header is all there is to check.
  const hasBody = method.toUpperCase() !== 'HEAD'
  if (r.status >= 400 && hasBody && envelope) {
    const bad = envelopeProblem(r)
    if (bad) problems.push({ rule: r.status >= 500 ? '5xx without envelope' : '4xx without envelope', detail: `${r.status}: ${bad}${bodyPreview(r)}` })
  }
  return problems
}

/** Why the body is not `{"type":"error","error":{"type","message"},"request_id":"req_…"}` matching its header, if it is not. */
export function envelopeProblem(r: ParsedResponse): string | undefined {
  if (!/application\/json/.test(r.headers['content-type'] ?? '')) return `content-type ${JSON.stringify(r.headers['content-type'] ?? null)}`
  let j: unknown
  try {
    j = JSON.parse(r.body.toString('utf8'))
  } catch {
    return 'body is not JSON'
  }
  const e = j as { type?: unknown; error?: { type?: unknown; message?: unknown }; request_id?: unknown }
  if (!e || typeof e !== 'object' || e.type !== 'error') return 'type is not "error"'
  if (!e.error || typeof e.error !== 'object') return 'no error object'
  if (typeof e.error.type !== 'string' || !e.error.type) return 'error.type is not a string'
  if (typeof e.error.message !== 'string') return 'error.message is not a string'
  if (typeof e.request_id !== 'string' || !/^req_/.test(e.request_id)) return 'request_id is not req_…'
  if (e.request_id !== r.headers['request-id']) return `request_id ${e.request_id} ≠ header ${r.headers['request-id']}`
  return undefined
}

const headLine = (r: ParsedResponse) => r.head.split('\r\n')[0] ?? ''
const bodyPreview = (r: ParsedResponse) => (r.body.length ? ` — ${JSON.stringify(r.body.subarray(0, 300).toString('utf8'))}` : '')
const preview = (b: Buffer) => (b.length ? `: ${JSON.stringify(b.subarray(0, 200).toString('latin1'))}` : '')
