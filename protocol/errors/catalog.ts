import { formatAmount } from '../cost.js'

/**
 * Every error the server can return, by code (Fastify's lib/errors.js is the model): its status, its type, the one
 * message template of the code, and whether the code reaches the client as `details.error_code`. Codes that are sent
 * are part of the API (the official client maps some to error classes): never rename one. The others name the error
 * in logs and tests only, so a client never depends on them.
 *
 * Messages name the field first where there is one ("field: rule"). `invalid_request` and `internal` take their
 * message whole: shape rules worded where they are checked, and bugs.
 */
export interface CatalogEntry<P extends unknown[] = never[]> {
  readonly status: number
  readonly type: ErrorType
  /** Sent as `details.error_code`. */
  readonly wire: boolean
  /** The `retry-after-ms` a 503 carries: how long the condition usually lasts. */
  readonly retryAfterMs?: number
  readonly message: (...params: P) => string
  /** More of `details` beside `error_code`, made from the same params (a 412's `current_state`). */
  readonly details?: (...params: P) => Record<string, unknown>
  /** Fields of the error object itself beside `type` and `message` (a memory path conflict's `conflicting_path`). */
  readonly fields?: (...params: P) => Record<string, unknown>
}

/** The error types of the wire (`error.type`); each status has one (`TYPE_OF`). */
export type ErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'conflict_error'
  | 'memory_path_conflict_error'
  | 'memory_precondition_failed_error'
  | 'request_too_large'
  | 'rate_limit_error'
  | 'api_error'
  | 'overloaded_error'
  | 'timeout_error'

/** The type that goes with each status: one status, one type, so the two can never disagree. */
const TYPE_OF: Record<number, ErrorType> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  405: 'invalid_request_error',
  408: 'invalid_request_error',
  409: 'conflict_error',
  412: 'invalid_request_error',
  413: 'request_too_large',
  422: 'invalid_request_error',
  429: 'rate_limit_error',
  431: 'invalid_request_error',
  500: 'api_error',
  503: 'overloaded_error',
  504: 'timeout_error',
}

interface Options {
  /** Send the code as `details.error_code`. Default false. */
  wire?: boolean
  /** 503 (and 429, where it is set per refusal): the retry hint. */
  retryAfterMs?: number
  /** A type of its own rather than its status's: the memory 409s the official client tells apart (WIRE §1.5). */
  type?: ErrorType
}

/** An entry whose `details` carry more than its code (made from the same params as its message). */
const withDetails = <P extends unknown[]>(e: CatalogEntry<P>, details: (...params: P) => Record<string, unknown>): CatalogEntry<P> => ({ ...e, details })

/** An entry whose error object carries fields of its own (made from the same params as its message). */
const withFields = <P extends unknown[]>(e: CatalogEntry<P>, fields: (...params: P) => Record<string, unknown>): CatalogEntry<P> => ({ ...e, fields })

const entry = <P extends unknown[]>(status: keyof typeof TYPE_OF, message: (...params: P) => string, o: Options = {}): CatalogEntry<P> => ({
  status,
  type: o.type ?? TYPE_OF[status]!,
  wire: o.wire ?? false,
  ...(o.retryAfterMs === undefined ? {} : { retryAfterMs: o.retryAfterMs }),
  message,
})

const WIRE = { wire: true }

export const catalog = {
  // 400: the request breaks a rule of its shape or of the resource.
  invalid_request: entry(400, (message: string) => message),
  upload_not_multipart: entry(400, () => 'content-type: an upload must be multipart/form-data with a boundary'),
  upload_file_missing: entry(400, () => 'file: the upload has no part named "file"; send the bytes as a file part named "file"'),
  upload_file_repeated: entry(400, () => 'file: the upload has more than one part named "file"; send exactly one'),
  rubric_file_unreadable: entry(
    400,
    (field: string, why: string) => `${field}: the rubric file ${why}; give a UTF-8 text file of at most 262144 characters`,
    WIRE,
  ),
  skill_bundle_invalid: entry(400, (message: string) => `files: ${message}; nothing was stored`, WIRE),
  skill_runtime_name_taken: entry(
    400,
    (field: string, name: string, other: string) =>
      `${field}: its skill is named ${JSON.stringify(name)}, as is ${other}; a session's skills need distinct names (each is a directory under /workspace/skills)`,
    WIRE,
  ),
  skills_too_large: entry(
    400,
    (bytes: number, limit: number) => `agent.skills: the skills unpack to ${bytes} bytes in all; a session may run at most ${limit}`,
    WIRE,
  ),
  skill_name_changed: entry(
    400,
    (name: string, was: string) =>
      `files: the bundle is named ${JSON.stringify(name)}, but this skill's versions are named ${JSON.stringify(was)}; nothing was stored`,
    WIRE,
  ),
  skill_bundle_missing: entry(
    400,
    () => 'files: the upload has no bundle; send a zip as the part "file", or the files as parts "files[]" named by their path',
    WIRE,
  ),
  upload_malformed: entry(400, (why: string) => `body: not well-formed multipart/form-data (${why}); nothing was stored`),
  invalid_cursor: entry(400, () => 'page must be a cursor returned by this endpoint (was not a valid cursor)'),
  cursor_filter_mismatch: entry(400, () => 'page was issued for different filters; repeat the original query with it', WIRE),
  metadata_too_many_keys: entry(400, (max: number, left: number) => `metadata: at most ${max} keys (this patch would leave ${left})`),
  invalid_metadata: entry(400, (problem: string) => `metadata: ${problem}`, WIRE),
  body_too_deep: entry(400, (limit: number) => `Request body nests objects and arrays more than ${limit} levels deep (the limit is ${limit})`),
  invalid_json: entry(400, (why: string) => `Request body is not valid JSON: ${why}`),
  body_not_object: entry(400, (was: string) => `body must be a JSON object, not ${was}`),
  array_too_long: entry(400, (where: string, items: number, max: number) => `${where} has ${items} items; an array in a request holds at most ${max}`),
  too_many_keys: entry(400, (where: string, keys: number, max: number) => `${where} has ${keys} keys; an object in a request holds at most ${max}`),
  proto_key: entry(400, (where: string) => `${where}: the key __proto__ is not allowed`),
  content_length_invalid: entry(400, (raw: string) => `content-length must be one non-negative integer, not ${JSON.stringify(raw.slice(0, 64))}`),
  version_header_missing: entry(400, () => 'A version header is required: send vendor-version or anthropic-version'),
  version_header_unsupported: entry(
    400,
    (value: string, accepted: readonly string[]) => `Unsupported version header value ${JSON.stringify(value)}: use one of ${accepted.join(', ')}`,
  ),
  beta_header_missing: entry(400, (beta: string) => `This route requires the beta header value ${beta} (in vendor-beta or anthropic-beta)`),
  content_type_unsupported: entry(400, () => 'content-type must be application/json on requests with a JSON body'),
  malformed_http: entry(400, (why: string, parserCode?: string) => `Malformed HTTP request: ${why}${parserCode ? ` (${parserCode})` : ''}`),
  event_not_in_session: entry(
    400,
    (field: string, sessionId: string, eventId: string) => `${field} must be the id of an event of session ${sessionId}; ${eventId} is not one`,
  ),
  roster_member_not_found: entry(400, (at: string, id: string) => `${at}: agent ${id} does not exist`),
  roster_member_archived: entry(400, (at: string, id: string) => `${at}: agent ${id} is archived`),
  agent_archived: entry(400, (id: string) => `Agent ${id} is archived and read-only: it cannot be updated nor used for new sessions`, WIRE),
  environment_archived: entry(400, (id: string) => `Environment ${id} is archived and cannot be changed or used`, WIRE),
  vault_archived: entry(400, (id: string) => `Vault ${id} is archived and cannot be used for new sessions or runs`, WIRE),
  memory_store_archived: entry(400, (id: string) => `Memory store ${id} is archived and cannot be attached to new sessions`, WIRE),
  dream_not_ended: entry(
    400,
    (id: string, status: string) => `Dream ${id} is ${status}; only a completed, failed or canceled dream can be archived (cancel it first)`,
    WIRE,
  ),
  dream_ended: entry(400, (id: string, status: string) => `Dream ${id} is ${status} already; only a pending or running dream can be canceled`, WIRE),
  dream_input_archived: entry(
    400,
    (field: string, id: string) => `${field}: memory store ${id} is archived; a dream reads and writes only stores that are not archived`,
    WIRE,
  ),
  credential_type_mismatch: entry(
    400,
    (id: string, stored: string, given: string) => `auth.type: credential ${id} is ${stored}; an update's auth must be of the same type (was ${given})`,
    WIRE,
  ),
  vault_credentials_full: entry(
    400,
    (vault: string, max: number, what: string) => `Vault ${vault} already holds ${max} ${what}, the most a vault may; delete or archive one first`,
    WIRE,
  ),
  budget_create_only: entry(
    400,
    () => 'budget: a budget can only be replaced or removed; this session was created without one, or its budget was removed',
    WIRE,
  ),
  budget_not_raised: entry(
    400,
    (consumedCents: number) =>
      `budget.max_list_cost.amount: the new maximum must be greater than the list cost already consumed (${formatAmount(consumedCents)} cents, rounded)`,
    WIRE,
  ),
  mount_path_conflict: entry(
    400,
    (field: string, path: string, other: string, otherPath: string) =>
      `${field}: ${path} overlaps the mount path of ${other} (${otherPath}); two resources may not share a mount path, nor may one lie beneath the other`,
  ),
  too_many_resources: entry(400, (max: number) => `resources: a session holds at most ${max} resources; delete one first`),
  too_many_memory_stores: entry(400, (index: number, max: number) => `resources[${index}]: a session attaches at most ${max} memory stores`),
  resource_token_unsupported: entry(
    400,
    (id: string, kind: string) => `authorization_token: only github_repository resources take a token; ${id} is a ${kind} resource`,
  ),
  model_not_budgetable: entry(
    400,
    (models: readonly string[]) => `budget: every model of the session needs a known list price to be budgeted (${models.join(', ')})`,
    WIRE,
  ),

  // 401: no key where one is needed (strict mode checks only that one is sent), or one that is not a live key.
  api_key_missing: entry(401, () => 'An API key is required: send x-api-key or authorization'),
  api_key_invalid: entry(401, (why: string) => `x-api-key: the API key ${why}`, WIRE),
  admin_key_required: entry(
    401,
    () => 'x-api-key: the admin routes need a key of scope admin (make one with `troupe keys create --scope admin`, or TROUPE_ADMIN_KEY_FILE)',
    WIRE,
  ),

  sessions_token_invalid: entry(401, (why: string) => `Authorization: the sessions token ${why}`, WIRE),

  // 403: a credential held to a scope (a work item's sessions token, protocol/sessions-token.ts).
  sessions_token_scope: entry(
    403,
    (what: string) => `Authorization: the sessions token does not reach ${what}; it is scoped to one work item and its session`,
    WIRE,
  ),

  api_key_read_only: entry(403, (method: string, path: string) => `x-api-key: this key is read-only; ${method} ${path} changes something`, WIRE),
  api_key_not_admin: entry(403, (scope: string) => `x-api-key: the admin routes need a key of scope admin (this one is ${scope})`, WIRE),

  // 404.
  api_key_not_found: entry(404, (id: string) => `API key ${id} not found`, WIRE),
  /** An id that cannot name anything (the router: not shaped like ours); no code, since nothing was looked up. */
  not_found: entry(404, (what: string, id: string) => `${what} ${id} not found`),
  route_not_found: entry(404, (method: string, path: string) => `No route for ${method} ${path}`),
  agent_not_found: entry(404, (id: string) => `Agent ${id} not found`, WIRE),
  agent_version_not_found: entry(404, (id: string, version: number) => `Agent ${id} version ${version} not found`, WIRE),
  work_not_found: entry(404, (id: string, env: string) => `Work ${id} not found in environment ${env}`, WIRE),
  environment_not_found: entry(404, (id: string) => `Environment ${id} not found`, WIRE),
  session_not_found: entry(404, (id: string) => `Session ${id} not found`, WIRE),
  deployment_not_found: entry(404, (id: string) => `Deployment ${id} not found`, WIRE),
  deployment_run_not_found: entry(404, (id: string) => `Deployment run ${id} not found`, WIRE),
  file_not_found: entry(404, (id: string) => `File ${id} not found`, WIRE),
  vault_not_found: entry(404, (id: string) => `Vault ${id} not found`, WIRE),
  webhook_not_found: entry(404, (id: string) => `Webhook endpoint ${id} not found`, WIRE),
  skill_not_found: entry(404, (id: string) => `Skill ${id} not found`, WIRE),
  session_thread_not_found: entry(404, (field: string, session: string, thread: string) => `${field}: session ${session} has no thread ${thread}`, WIRE),
  skill_version_not_found: entry(404, (id: string, version: string) => `Skill ${id} has no version ${version}`, WIRE),
  credential_not_found: entry(404, (id: string, vault: string) => `Credential ${id} not found in vault ${vault}`, WIRE),
  memory_store_not_found: entry(404, (id: string) => `Memory store ${id} not found`, WIRE),
  dream_not_found: entry(404, (id: string) => `Dream ${id} not found`, WIRE),
  memory_not_found: entry(404, (id: string, store: string) => `Memory ${id} not found in memory store ${store}`, WIRE),
  memory_version_not_found: entry(404, (id: string, store: string) => `Memory version ${id} not found in memory store ${store}`, WIRE),
  session_resource_not_found: entry(404, (id: string, sessionId: string) => `Session resource ${id} not found in session ${sessionId}`, WIRE),

  // 405: the path exists under other methods (listed in `Allow`).
  method_not_allowed: entry(
    405,
    (method: string, path: string, allowed: readonly string[]) => `${method} is not allowed on ${path}; allowed: ${allowed.join(', ')}`,
  ),
  connect_not_allowed: entry(405, () => 'CONNECT is not allowed: this server is not a proxy'),

  // 408.
  request_timeout: entry(408, () => 'The request did not arrive in time'),

  // 409: conflicts that retrying cannot fix; the envelope marks them `x-should-retry: false`.
  skill_has_versions: entry(409, (id: string, count: number) => `Skill ${id} still has ${count} version(s); delete every version first`, WIRE),
  skill_version_pinned: entry(
    409,
    (id: string, version: string, by: string) => `Skill ${id} version ${version} is pinned by ${by}; it can be deleted once nothing pins it`,
    WIRE,
  ),
  skill_title_taken: entry(409, (title: string) => `display_title: another custom skill is titled ${JSON.stringify(title)}; titles are unique`, WIRE),
  api_key_revoked: entry(409, (id: string) => `API key ${id} is revoked; it cannot be rotated (create a new one)`, WIRE),
  session_archived: entry(409, (id: string) => `Session ${id} is archived; it accepts no more events or updates`, WIRE),
  outcome_in_progress: entry(
    409,
    (field: string, outcome: string) =>
      `${field}: outcome ${outcome} is still being worked on; a session works toward one outcome at a time (send user.interrupt to stop it)`,
    WIRE,
  ),
  thread_running: entry(
    409,
    (id: string) => `Thread ${id} is running; interrupt it first (send user.interrupt with its session_thread_id) and retry once it is idle`,
    WIRE,
  ),
  session_running: entry(409, (id: string) => `Session ${id} is running; interrupt it first (send user.interrupt) and retry once it is idle`, WIRE),
  session_busy_resources: entry(
    409,
    (id: string) =>
      `Session ${id} is running; its resources change only while it is idle: interrupt it first (send user.interrupt), or wait for session.status_idle, and retry`,
    WIRE,
  ),
  deployment_archived: entry(409, (id: string) => `Deployment ${id} is archived; it cannot be updated, unpaused or run`, WIRE),
  vault_read_only: entry(409, (id: string) => `Vault ${id} is archived; it and its credentials are read-only (they can still be deleted)`, WIRE),
  credential_archived: entry(409, (id: string) => `Credential ${id} is archived; it cannot be updated (it can still be deleted)`, WIRE),
  credential_duplicate: entry(
    409,
    (field: string, value: string, vault: string, other: string) =>
      `${field}: vault ${vault} already has an active credential for ${value} (${other}); archive or delete it first`,
    WIRE,
  ),
  session_exists: entry(409, (id: string) => `Session ${id} already exists`),
  environment_in_use: entry(409, (id: string, sessions: number) => `Environment ${id} is referenced by ${sessions} session(s); delete them first`, WIRE),
  agent_version_conflict: entry(409, (current: number) => `version: stale (current version is ${current})`, WIRE),
  memory_path_conflict: withFields(
    entry(
      409,
      (field: string, path: string, conflictingPath: string, conflictingId: string) =>
        conflictingPath === path
          ? `${field}: ${JSON.stringify(path)} is the path of memory ${conflictingId}; rename or delete it first, or update it instead`
          : `${field}: ${JSON.stringify(path)} overlaps ${JSON.stringify(conflictingPath)}, the path of memory ${conflictingId} (one path may not be an ancestor of another); rename or delete it first`,
      { wire: true, type: 'memory_path_conflict_error' },
    ),
    (_field, _path, conflictingPath, conflictingId) => ({ conflicting_path: conflictingPath, conflicting_memory_id: conflictingId }),
  ),
  memory_precondition_failed: entry(
    409,
    (field: string, id: string) => `${field}: memory ${id} no longer has that content_sha256; nothing was changed (retrieve the memory and retry)`,
    { wire: true, type: 'memory_precondition_failed_error' },
  ),
  memory_store_read_only: entry(
    409,
    (id: string) => `Memory store ${id} is archived; its memories cannot be created or changed, nor the store updated (they can still be read and deleted)`,
    WIRE,
  ),
  memory_store_held: entry(
    409,
    (id: string, dream: string) =>
      `output_behavior.memory_store_id: memory store ${id} is being updated by dream ${dream}, which has not fully stopped; wait for it to end (or cancel it) and retry`,
    WIRE,
  ),
  memory_store_in_use: entry(
    409,
    (id: string, sessions: number) => `Memory store ${id} is attached to ${sessions} session(s) that are not deleted; delete them first`,
    WIRE,
  ),
  memory_version_current: entry(
    409,
    (id: string, memory: string) => `Memory version ${id} holds the current content of memory ${memory}; update or delete the memory first, then redact it`,
    WIRE,
  ),

  work_stopped: entry(409, (id: string) => `Work ${id} is stopped`, WIRE),
  work_not_queued: entry(409, (id: string, state: string) => `Work ${id} is ${state}; only a queued item is acknowledged`, WIRE),

  // 412: a compare-and-set the caller asked for did not hold.
  heartbeat_precondition_failed: withDetails(
    entry(
      412,
      (id: string, _current: Record<string, unknown>) => `expected_last_heartbeat: does not match the lease of work ${id}; another worker may hold it`,
      WIRE,
    ),
    (_id, current) => ({ current_state: current }),
  ),

  // 413.
  body_too_large: entry(413, (limit: number) => `Request body exceeds the limit of ${limit} bytes`),
  skill_bundle_too_large: entry(413, (limit: number) => `files: a skill bundle must be smaller than ${limit} bytes; nothing was stored`, WIRE),
  file_too_large: entry(413, (limit: number) => `file: larger than the limit of ${limit} bytes (TROUPE_FILE_MAX_MIB); nothing was stored`),
  encoded_too_large: entry(
    413,
    (size: number, maxPayload: number) =>
      `Request is ${size} bytes once encoded for NATS, over the server's max_payload of ${maxPayload} bytes (raise max_payload in the NATS configuration)`,
  ),
  /** One event of the request could not be stored whole; nothing of the request was stored. */
  event_too_large: entry(
    413,
    (index: number, eventType: string, size: number, limit: number) =>
      `The event at index ${index} of the request (${eventType}) is ${size} bytes of JSON; a stored event holds at most ${limit}. Nothing of this request was stored`,
  ),

  // 422: well-formed, but this server cannot do it (an unsupported capability, a vendor-only feature).
  idempotency_key_reused: entry(422, () => 'Idempotency-Key header: this key was first used with a different request; use a new key for a new request', WIRE),
  vendor_skills_unsupported: entry(
    422,
    (index: number) => `skills[${index}]: vendor-managed (anthropic) skills are not supported; reference a custom skill`,
    WIRE,
  ),
  skills_not_run: entry(
    422,
    (why: string) =>
      `agent.skills: custom skills run only in sessions whose tools run in an isolated (container-backed) sandbox, and ${why}; create the session from an agent without skills, or override skills with []`,
    WIRE,
  ),
  skills_unavailable: entry(422, () => "Custom skills are not available: the skill bundles' store could not be opened", WIRE),
  multiagent_unavailable: entry(
    422,
    (field: string, what: string) => `${field}: ${what} are not available on this server yet; send {"type":"disabled"} or omit it`,
    WIRE,
  ),
  memory_stores_not_mounted: entry(
    422,
    (index: number, why: string) =>
      `resources[${index}]: memory stores are mounted only in sessions whose tools run in an isolated (container-backed) sandbox, and ${why}; create the session without memory_store resources`,
    WIRE,
  ),
  resource_unsupported: entry(
    422,
    (index: number, kind: string, on: 'sessions' | 'deployments' = 'sessions') => `resources[${index}]: ${kind} resources are not supported on ${on}`,
    WIRE,
  ),
  vaults_unavailable: entry(422, () => 'vault_ids: vaults need the operator keyring (TROUPE_VAULT_KEYRING_FILE), which this server has not configured', WIRE),
  webhooks_unavailable: entry(
    422,
    () => 'Webhooks need the operator keyring to seal their signing secrets (TROUPE_VAULT_KEYRING_FILE), which this server has not configured',
    WIRE,
  ),
  keyring_unavailable: entry(
    422,
    () =>
      'Vaults need the operator keyring to seal their secrets (TROUPE_VAULT_KEYRING_FILE), which this server has not configured; reads and deletes still work',
    WIRE,
  ),
  mcp_egress_blocked: entry(
    400,
    (at: string, server: string, environmentId: string) =>
      `${at}: MCP server ${server} cannot be reached: environment ${environmentId} has limited networking without allow_mcp_servers`,
    WIRE,
  ),
  networking_unenforceable: entry(
    422,
    (environmentId: string) =>
      `environment_id: environment ${environmentId} uses limited networking, which this server's sandboxes cannot enforce (the local backend runs tools on the host's own network; the isolated one needs socat for its egress proxy)`,
    WIRE,
  ),
  packages_unsupported: entry(
    422,
    (environmentId: string, managers: readonly string[]) =>
      `environment_id: environment ${environmentId} lists packages (${managers.join(', ')}), which this server's sandboxes cannot install (the local backend installs none; the isolated one needs socat for the registries)`,
    WIRE,
  ),

  // 429: a key over its limits (gateway/rate-limit.ts); the retry hint is set per refusal.
  rate_limited: entry(429, (what: string, limit: number) => `This API key is over its limit of ${limit} ${what}; retry after the time in retry-after`, WIRE),

  // 431.
  headers_too_large: entry(431, (maxKib: number) => `Request header fields too large: the request line and headers may be at most ${maxKib} KiB`),

  // 500: our bug. Anything thrown that is not an ApiError is `internal` with the default message, revealing nothing.
  internal: entry(500, (message?: string) => message ?? 'Internal server error'),
  keyring_mismatch: entry(
    500,
    (why: string) =>
      `The hosts of this cluster hold operator keyrings that do not work together (${why}): vault writes and webhooks are refused until every host is started with the same TROUPE_VAULT_KEYRING_FILE`,
  ),
  undecodable_request: entry(500, () => 'Undecodable actor request'),
  operation_not_placed: entry(500, (op: string, kind: string, where: string) => `No operation ${op} on ${kind} placed on ${where}`),

  // 503: a moment's condition; the official client retries after `retry-after-ms`.
  /** NATS or JetStream unavailable for a moment (actors/kit/nats-errors.ts): the hint is about one election. */
  store_unavailable: entry(503, () => 'The store is temporarily unavailable (NATS JetStream); retry shortly', { retryAfterMs: 1000 }),
  contention: entry(503, () => 'Too many concurrent changes to the same record; retry shortly', { retryAfterMs: 500 }),
  /** The gateway already waited out most of a failover (actors/kit/wire.ts): what is left of it is short. */
  failing_over: entry(503, () => 'The owner of this resource is failing over; retry shortly', { retryAfterMs: 250 }),
  /**
   * Between host and caller: the partition was being handed over and its next owner cannot have received the
   * request, which was not served. The actor wire sends it again (as after "no responders"); the client sees
   * `failing_over`'s answer only if the hand-over outlasts that.
   */
  handed_over: entry(503, () => 'The owner of this resource is failing over; retry shortly', { retryAfterMs: 1000 }),
  owner_timeout: entry(503, () => 'The owner of this resource did not answer in time; retry shortly', { retryAfterMs: 1000 }),
  actor_moving: entry(503, (kind: string) => `This ${kind} is moving to another host; retry shortly`, { retryAfterMs: 500 }),
  parse_pool_busy: entry(
    503,
    (budgetMib: number) => `Large request bodies waiting to be parsed would pass this server's budget of ${budgetMib} MiB; retry shortly`,
    { retryAfterMs: 1000 },
  ),
  stream_closed: entry(503, () => 'The event stream closed before it started; retry shortly', { retryAfterMs: 500 }),
  history_write_failed: entry(503, () => 'The session history could not be written; retry shortly', { retryAfterMs: 1000 }),
  history_behind: entry(
    503,
    (sessionId: string, readTo: number, lastSeq: number) =>
      `The history of session ${sessionId} was read up to ${readTo} of ${lastSeq} (a replica behind); retry shortly`,
    { retryAfterMs: 500 },
  ),
  history_read_stalled: entry(503, () => 'Reading the session history stalled; retry shortly', { retryAfterMs: 1000 }),

  /**
   * 504: a request that stores something got no certain outcome (its write, or the owner's answer, timed out), so it
   * may or may not have been stored. Never retried blindly (`x-should-retry: false`): a retry could store it twice. An
   * Idempotency-Key makes such retries safe, and then the answer is a 503 instead.
   */
  outcome_uncertain: entry(
    504,
    (what: string) =>
      `${what} may or may not have been stored; look before sending it again. Requests sent with an Idempotency-Key header can be retried safely`,
  ),
} as const

export type ErrorCode = keyof typeof catalog

/** The parameters of a code's message template. */
export type ErrorParams<C extends ErrorCode> = Parameters<(typeof catalog)[C]['message']>

export const isErrorCode = (code: unknown): code is ErrorCode => typeof code === 'string' && Object.hasOwn(catalog, code)
