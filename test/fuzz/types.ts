/** The shapes shared by the fuzz runner's parts: what a request is, what came back, what counts. */

export const HTTP_CLASSES = [
  'malformed-json',
  'deep-json',
  'wrong-type',
  'array-for-object',
  'hostile-path-id',
  'hostile-body-id',
  'hostile-query',
  'odd-method',
  'big-body',
  'hostile-header',
] as const
export const CLASSES = [...HTTP_CLASSES, 'raw-http'] as const
export type ClassName = (typeof CLASSES)[number]

/**
 * Resources the hostile requests may use and damage (update, archive, delete, send events to). The
 * canaries are separate and never named by any request, so any change to them is a server bug.
 */
export interface Victims {
  agents: string[]
  environments: string[]
  sessions: string[]
  deployments: string[]
  deployment_runs: string[]
  files: string[]
  /** Resources of the victim sessions (`resource_id`), each a copy of a victim file. */
  session_resources: string[]
  /** The victim sessions' primary threads (`thread_id`), at the sessions' indexes. */
  session_threads: string[]
  vaults: string[]
  /** One credential in each victim vault, at the same index (`credential_id` is named beside its `vault_id`). */
  credentials: string[]
  /** Webhook endpoints (`webhook_id`). */
  webhooks: string[]
  /** Skills of one version each (`skill_id`; `version` is "1"). */
  skills: string[]
  /** Self-hosted environments (also in `environments`), each with one work item: `work[i]` is in `work_environments[i]`. */
  work_environments: string[]
  work: string[]
  /** The session of each item, and the sessions token a poll handed it out with (at setup), at the same index. */
  work_sessions: string[]
  work_tokens: string[]
  /** Memory stores, each with one memory at the same index, and that memory's first version. */
  memory_stores: string[]
  memories: string[]
  memory_versions: string[]
  /** Dreams over the victim memory stores, at the same index (their status moves by itself: no canary is a dream). */
  dreams: string[]
  /** API keys made through the admin routes (`api_key_id`). */
  api_keys: string[]
}

/** A well-framed HTTP/1.1 request with hostile content; sent over a fresh socket exactly as written. */
export interface HttpSpec {
  kind: 'http'
  class: ClassName
  /** The route pattern (or ops path) it aims at, for grouping findings. */
  route: string
  method: string
  /** The request-target as written on the request line: may hold raw non-ASCII, `%` escapes, anything. */
  target: string
  headers: Array<[string, string]>
  body?: Buffer
  /** Send the body with `transfer-encoding: chunked` (in 64 KiB chunks) rather than a content-length. */
  chunked?: boolean
  /** What is hostile about it, in a few words. */
  note: string
  /** The only statuses a correct server may answer (e.g. 401 for a forged sessions token); any non-5xx when absent. */
  expect?: number[]
}

/** One write to the socket, after an optional pause (to split a request line or a body across packets). */
export interface RawWrite {
  bytes: Buffer
  delayMs?: number
}

/**
 * What a malformed exchange should end with: `answer` — it is valid HTTP after all (split writes, HTTP/1.0)
 * and must get a proper answer from our routes; `parser` — any parser answer, envelope or close is fine;
 * `none` — we hang up mid-request, nothing to read.
 */
export type RawExpect = 'answer' | 'parser' | 'none'

export interface RawSpec {
  kind: 'raw'
  class: 'raw-http'
  route: string
  /** The method of the first request, so a HEAD response is read without a body. */
  method: string
  writes: RawWrite[]
  /** Close right after the last write instead of reading an answer. */
  hangUp: boolean
  expect: RawExpect
  /** How many answers `answer` requires (pipelined requests: one each). */
  answers: number
  note: string
}

export type Spec = HttpSpec | RawSpec

export interface ParsedResponse {
  status: number
  /** The status line and headers as received. */
  head: string
  /** Lower-cased names; a repeated header joined with ", ". */
  headers: Record<string, string>
  /** How many times each header appeared (a duplicated request-id is its own bug). */
  headerCounts: Record<string, number>
  body: Buffer
}

/** What came back on the socket. */
export type Outcome =
  | {
      kind: 'response'
      response: ParsedResponse
      /** Complete responses that followed the first (pipelined requests). */
      more: ParsedResponse[]
      /** Bytes after those that are no response (a body sent on HEAD, garbage). */
      trailing: Buffer
    }
  | { kind: 'closed'; partial: Buffer }
  | { kind: 'reset'; partial: Buffer; error: string }
  | { kind: 'timeout'; partial: Buffer }
  | { kind: 'hung-up' }

export type HttpTransport = 'uws' | 'node'

/** A broken rule, with everything needed to replay it. */
export interface Failure {
  index: number | undefined
  class: ClassName | 'run'
  route: string
  /** Short, stable: what rule broke ("5xx", "no envelope", "canary changed", …), used to group findings. */
  rule: string
  /** What was hostile about the request (the spec's note). */
  note?: string
  /** The status (or how the exchange ended) it came with, when there was an exchange. */
  status?: string
  detail: string
  request?: string
  response?: string
}
