import t from 'tap'
import { ApiError } from '../../protocol/errors/api-error.js'
import { catalog, isErrorCode, type ErrorCode, type ErrorParams } from '../../protocol/errors/catalog.js'
import { toEnvelope } from '../../protocol/errors/envelope.js'
import { fail, inField } from '../../protocol/errors/fail.js'

/**
 * The error catalog (protocol/errors/catalog.ts): every code's status, type and wire form agree with each other and
 * with the envelope. Texts are pinned by the tests of the code that throws them.
 */

/** Parameters for every code's template. Typed per code: a code added to the catalog must be added here. */
const SAMPLES: { [C in ErrorCode]: ErrorParams<C> } = {
  invalid_request: ['name: must be non-empty'],
  upload_not_multipart: [],
  upload_file_missing: [],
  upload_file_repeated: [],
  upload_malformed: ['Unexpected end of form'],
  skill_bundle_invalid: ['my-skill/../x: a path may not climb out of the bundle'],
  skill_name_changed: ['other', 'my-skill'],
  skill_bundle_missing: [],
  skill_bundle_too_large: [30_000_000],
  skill_not_found: ['skill_1'],
  skill_version_not_found: ['skill_1', '3'],
  session_thread_not_found: ['events[0].session_thread_id', 'sesn_1', 'sthr_1'],
  thread_running: ['sthr_1'],
  skill_has_versions: ['skill_1', 2],
  skill_version_pinned: ['skill_1', '1', 'agent agent_1'],
  skill_title_taken: ['My skill'],
  skills_not_run: ['environment env_1 is self_hosted'],
  skill_runtime_name_taken: ['agent.skills[1]', 'pdf', 'agent.skills[0]'],
  skills_too_large: [600000000, 500000000],
  file_not_found: ['file_1'],
  file_too_large: [1024],
  invalid_cursor: [],
  cursor_filter_mismatch: [],
  metadata_too_many_keys: [16, 17],
  invalid_metadata: ['at most 16 keys'],
  sessions_token_invalid: ['is expired'],
  sessions_token_scope: ['GET /v1/agents'],
  work_not_found: ['work_1', 'env_1'],
  work_stopped: ['work_1'],
  work_not_queued: ['work_1', 'active'],
  heartbeat_precondition_failed: ['work_1', { state: 'active', last_heartbeat: null, lease_extended: false, ttl_seconds: 60 }],
  body_too_deep: [64],
  invalid_json: ['Unexpected end of JSON input'],
  body_not_object: ['an array'],
  array_too_long: ['body.tools', 10_001, 10_000],
  too_many_keys: ['body.metadata', 10_001, 10_000],
  proto_key: ['body.metadata'],
  content_length_invalid: ['12, 13'],
  version_header_missing: [],
  version_header_unsupported: ['1999-01-01', ['2023-06-01']],
  beta_header_missing: ['managed-agents-2026-04-01'],
  content_type_unsupported: [],
  malformed_http: ['Invalid method', 'HPE_INVALID_METHOD'],
  event_not_in_session: ['after', 'sesn_1', 'sevt_2'],
  roster_member_not_found: ['multiagent.agents[0]', 'agent_1'],
  roster_member_archived: ['multiagent.agents[0]', 'agent_1'],
  agent_archived: ['agent_1'],
  environment_archived: ['env_1'],
  budget_create_only: [],
  budget_not_raised: [250],
  model_not_budgetable: [['claude-opus-4-7']],
  api_key_missing: [],
  api_key_invalid: ['has been revoked'],
  admin_key_required: [],
  api_key_read_only: ['POST', '/v1/agents'],
  api_key_not_admin: ['full'],
  api_key_not_found: ['apikey_1'],
  api_key_revoked: ['apikey_1'],
  rate_limited: ['requests per second', 10],
  not_found: ['Agent', 'agent-x'],
  route_not_found: ['GET', '/v1/nothing'],
  agent_not_found: ['agent_1'],
  agent_version_not_found: ['agent_1', 3],
  environment_not_found: ['env_1'],
  session_not_found: ['sesn_1'],
  deployment_not_found: ['depl_1'],
  deployment_run_not_found: ['drun_1'],
  deployment_archived: ['depl_1'],
  method_not_allowed: ['PUT', '/v1/agents', ['GET', 'HEAD', 'POST']],
  connect_not_allowed: [],
  request_timeout: [],
  session_archived: ['sesn_1'],
  session_running: ['sesn_1'],
  session_exists: ['sesn_1'],
  environment_in_use: ['env_1', 2],
  agent_version_conflict: [3],
  memory_path_conflict: ['path', '/a/b', '/a', 'mem_1'],
  memory_precondition_failed: ['precondition.content_sha256', 'mem_1'],
  memory_store_read_only: ['memstore_1'],
  memory_store_in_use: ['memstore_1', 2],
  memory_store_held: ['memstore_1', 'drm_1'],
  dream_not_found: ['drm_1'],
  dream_not_ended: ['drm_1', 'running'],
  dream_ended: ['drm_1', 'completed'],
  dream_input_archived: ['inputs[0].memory_store_id', 'memstore_1'],
  memory_version_current: ['memver_1', 'mem_1'],
  body_too_large: [1024],
  encoded_too_large: [2048, 1024],
  event_too_large: [0, 'user.message', 2048, 1024],
  idempotency_key_reused: [],
  vendor_skills_unsupported: [0],
  skills_unavailable: [],
  multiagent_unavailable: ['multiagent.workflows', 'workflow runs'],
  outcome_in_progress: ['events[0]', 'outc_1'],
  rubric_file_unreadable: ['events[0].rubric.file_id', 'is not UTF-8 text'],
  memory_stores_not_mounted: [0, 'environment env_1 is self_hosted'],
  too_many_memory_stores: [8, 8],
  mount_path_conflict: ['resources[1].mount_path', '/mnt/session/uploads/a/b', 'resources[0]', '/mnt/session/uploads/a'],
  too_many_resources: [500],
  resource_token_unsupported: ['sesrsc_1', 'file'],
  session_resource_not_found: ['sesrsc_1', 'sesn_1'],
  session_busy_resources: ['sesn_1'],
  resource_unsupported: [0, 'github_repository'],
  vaults_unavailable: [],
  keyring_unavailable: [],
  vault_archived: ['vlt_1'],
  memory_store_archived: ['memstore_1'],
  credential_type_mismatch: ['vcrd_1', 'static_bearer', 'mcp_oauth'],
  vault_credentials_full: ['vlt_1', 20, 'active credentials'],
  vault_not_found: ['vlt_1'],
  memory_store_not_found: ['memstore_1'],
  memory_not_found: ['mem_1', 'memstore_1'],
  memory_version_not_found: ['memver_1', 'memstore_1'],
  webhook_not_found: ['whep_1'],
  webhooks_unavailable: [],
  credential_not_found: ['vcrd_1', 'vlt_1'],
  vault_read_only: ['vlt_1'],
  credential_archived: ['vcrd_1'],
  credential_duplicate: ['auth.mcp_server_url', 'https://mcp.example.com', 'vlt_1', 'vcrd_1'],
  mcp_egress_blocked: ['agent.tools[0]', 'docs', 'env_1'],
  networking_unenforceable: ['env_1'],
  packages_unsupported: ['env_1', ['apt', 'pip']],
  headers_too_large: [16],
  internal: [],
  keyring_mismatch: ['key k1 differs between hosts host_a (0011) and host_b (2233)'],
  undecodable_request: [],
  operation_not_placed: ['get', 'agent', 'any host'],
  store_unavailable: [],
  contention: [],
  failing_over: [],
  handed_over: [],
  owner_timeout: [],
  actor_moving: ['session'],
  parse_pool_busy: [256],
  stream_closed: [],
  history_write_failed: [],
  history_behind: ['sesn_1', 3, 5],
  history_read_stalled: [],
  outcome_uncertain: ['The request'],
}

/**
 * What each code must be, written out here rather than read from the catalog under test: its status, and for a
 * 503 the retry-after-ms it carries. Typed per code, so a code added to the catalog must be added here too.
 */
const STATUS: { [C in ErrorCode]: number } = {
  invalid_request: 400,
  upload_not_multipart: 400,
  upload_file_missing: 400,
  upload_file_repeated: 400,
  upload_malformed: 400,
  skill_bundle_invalid: 400,
  skill_name_changed: 400,
  skill_bundle_missing: 400,
  skill_bundle_too_large: 413,
  skill_not_found: 404,
  skill_version_not_found: 404,
  session_thread_not_found: 404,
  thread_running: 409,
  skill_has_versions: 409,
  skill_version_pinned: 409,
  skill_title_taken: 409,
  skills_not_run: 422,
  skill_runtime_name_taken: 400,
  skills_too_large: 400,
  file_not_found: 404,
  file_too_large: 413,
  invalid_cursor: 400,
  cursor_filter_mismatch: 400,
  metadata_too_many_keys: 400,
  invalid_metadata: 400,
  sessions_token_invalid: 401,
  sessions_token_scope: 403,
  work_not_found: 404,
  work_stopped: 409,
  work_not_queued: 409,
  heartbeat_precondition_failed: 412,
  body_too_deep: 400,
  invalid_json: 400,
  body_not_object: 400,
  array_too_long: 400,
  too_many_keys: 400,
  proto_key: 400,
  content_length_invalid: 400,
  version_header_missing: 400,
  version_header_unsupported: 400,
  beta_header_missing: 400,
  content_type_unsupported: 400,
  malformed_http: 400,
  event_not_in_session: 400,
  roster_member_not_found: 400,
  roster_member_archived: 400,
  agent_archived: 400,
  environment_archived: 400,
  budget_create_only: 400,
  budget_not_raised: 400,
  model_not_budgetable: 400,
  api_key_missing: 401,
  api_key_invalid: 401,
  admin_key_required: 401,
  api_key_read_only: 403,
  api_key_not_admin: 403,
  api_key_not_found: 404,
  api_key_revoked: 409,
  rate_limited: 429,
  not_found: 404,
  route_not_found: 404,
  agent_not_found: 404,
  agent_version_not_found: 404,
  environment_not_found: 404,
  session_not_found: 404,
  method_not_allowed: 405,
  connect_not_allowed: 405,
  request_timeout: 408,
  session_archived: 409,
  session_running: 409,
  session_exists: 409,
  environment_in_use: 409,
  agent_version_conflict: 409,
  memory_path_conflict: 409,
  memory_precondition_failed: 409,
  memory_store_read_only: 409,
  memory_store_in_use: 409,
  memory_store_held: 409,
  dream_not_found: 404,
  dream_not_ended: 400,
  dream_ended: 400,
  dream_input_archived: 400,
  memory_version_current: 409,
  body_too_large: 413,
  encoded_too_large: 413,
  event_too_large: 413,
  idempotency_key_reused: 422,
  vendor_skills_unsupported: 422,
  skills_unavailable: 422,
  multiagent_unavailable: 422,
  outcome_in_progress: 409,
  rubric_file_unreadable: 400,
  deployment_not_found: 404,
  deployment_run_not_found: 404,
  deployment_archived: 409,
  memory_stores_not_mounted: 422,
  too_many_memory_stores: 400,
  mount_path_conflict: 400,
  too_many_resources: 400,
  resource_token_unsupported: 400,
  session_resource_not_found: 404,
  session_busy_resources: 409,
  resource_unsupported: 422,
  vaults_unavailable: 422,
  keyring_unavailable: 422,
  vault_archived: 400,
  memory_store_archived: 400,
  credential_type_mismatch: 400,
  vault_credentials_full: 400,
  vault_not_found: 404,
  memory_store_not_found: 404,
  memory_not_found: 404,
  memory_version_not_found: 404,
  webhook_not_found: 404,
  webhooks_unavailable: 422,
  credential_not_found: 404,
  vault_read_only: 409,
  credential_archived: 409,
  credential_duplicate: 409,
  mcp_egress_blocked: 400,
  networking_unenforceable: 422,
  packages_unsupported: 422,
  headers_too_large: 431,
  internal: 500,
  keyring_mismatch: 500,
  undecodable_request: 500,
  operation_not_placed: 500,
  store_unavailable: 503,
  contention: 503,
  failing_over: 503,
  handed_over: 503,
  owner_timeout: 503,
  actor_moving: 503,
  parse_pool_busy: 503,
  stream_closed: 503,
  history_write_failed: 503,
  history_behind: 503,
  history_read_stalled: 503,
  outcome_uncertain: 504,
}

const RETRY_AFTER_MS: Partial<Record<ErrorCode, number>> = {
  store_unavailable: 1000,
  contention: 500,
  failing_over: 250,
  handed_over: 1000,
  owner_timeout: 1000,
  actor_moving: 500,
  parse_pool_busy: 1000,
  stream_closed: 500,
  history_write_failed: 1000,
  history_behind: 500,
  history_read_stalled: 1000,
}

/** The codes sent on the wire as `details.error_code`: part of the API, never renamed, never dropped. */
const SENT: readonly ErrorCode[] = [
  'invalid_metadata',
  'sessions_token_invalid',
  'sessions_token_scope',
  'api_key_invalid',
  'admin_key_required',
  'api_key_read_only',
  'api_key_not_admin',
  'api_key_not_found',
  'api_key_revoked',
  'rate_limited',
  'work_not_found',
  'work_stopped',
  'work_not_queued',
  'heartbeat_precondition_failed',
  'cursor_filter_mismatch',
  'agent_archived',
  'environment_archived',
  'budget_create_only',
  'budget_not_raised',
  'model_not_budgetable',
  'agent_not_found',
  'agent_version_not_found',
  'environment_not_found',
  'session_not_found',
  'session_archived',
  'session_running',
  'environment_in_use',
  'agent_version_conflict',
  'memory_store_not_found',
  'memory_not_found',
  'memory_version_not_found',
  'memory_store_archived',
  'memory_path_conflict',
  'memory_precondition_failed',
  'memory_store_read_only',
  'mcp_egress_blocked',
  'memory_store_in_use',
  'memory_version_current',
  'memory_store_held',
  'dream_not_found',
  'dream_not_ended',
  'dream_ended',
  'dream_input_archived',
  'idempotency_key_reused',
  'vendor_skills_unsupported',
  'skills_unavailable',
  'multiagent_unavailable',
  'outcome_in_progress',
  'rubric_file_unreadable',
  'deployment_not_found',
  'deployment_run_not_found',
  'file_not_found',
  'deployment_archived',
  'memory_stores_not_mounted',
  'session_resource_not_found',
  'session_busy_resources',
  'resource_unsupported',
  'vaults_unavailable',
  'keyring_unavailable',
  'vault_archived',
  'credential_type_mismatch',
  'vault_credentials_full',
  'vault_not_found',
  'webhook_not_found',
  'webhooks_unavailable',
  'skill_bundle_invalid',
  'skill_name_changed',
  'skill_bundle_missing',
  'skill_bundle_too_large',
  'skill_not_found',
  'skill_version_not_found',
  'session_thread_not_found',
  'thread_running',
  'skill_has_versions',
  'skill_version_pinned',
  'skill_title_taken',
  'skills_not_run',
  'skill_runtime_name_taken',
  'skills_too_large',
  'credential_not_found',
  'vault_read_only',
  'credential_archived',
  'credential_duplicate',
  'networking_unenforceable',
  'packages_unsupported',
]

const TYPE_OF_STATUS: Record<number, string> = {
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

/** Codes whose `error.type` is their own rather than their status's (the memory 409s the official client tells apart). */
const OWN_TYPE: Partial<Record<ErrorCode, string>> = {
  memory_path_conflict: 'memory_path_conflict_error',
  memory_precondition_failed: 'memory_precondition_failed_error',
}
const typeOf = (code: ErrorCode) => OWN_TYPE[code] ?? TYPE_OF_STATUS[STATUS[code]]

const make = <C extends ErrorCode>(code: C) => fail(code, ...SAMPLES[code])
const CODES = Object.keys(STATUS) as ErrorCode[]

t.test('the catalog holds exactly the codes listed here', async (t) => {
  t.same(Object.keys(catalog).sort(), [...CODES].sort())
  t.same(Object.keys(SAMPLES).sort(), [...CODES].sort(), 'every code has samples, and nothing else does')
})

t.test('every code: its status, type, retry hint and wire form as listed here', async (t) => {
  for (const code of CODES) {
    const e = make(code)
    t.ok(e instanceof ApiError, code)
    t.equal(e.status, STATUS[code], `${code}: ${STATUS[code]}`)
    t.equal(e.type, typeOf(code), `${code}: a ${typeOf(code)}`)
    t.equal(e.reason, code, `${code}: the catalog code travels as reason`)
    t.equal(e.code, SENT.includes(code) ? code : undefined, `${code}: details.error_code ${SENT.includes(code) ? 'sent' : 'not sent'}`)
    t.ok(e.message.length > 0 && !e.message.includes('undefined'), `${code}: "${e.message}"`)
    t.equal(e.retryAfterMs, RETRY_AFTER_MS[code], `${code}: retry-after-ms ${RETRY_AFTER_MS[code] ?? 'none'}`)
    t.ok(isErrorCode(code))
  }
  // A wire code is part of the API: snake_case, as the official client reads it.
  for (const code of SENT) t.match(code, /^[a-z]+(_[a-z]+)*$/)
  t.notOk(isErrorCode('toString'), 'inherited names are no codes')
  t.notOk(isErrorCode('no_such_code'))
})

t.test('templates are typed by code', async (t) => {
  t.equal(fail('session_archived', 'sesn_1').message, 'Session sesn_1 is archived; it accepts no more events or updates')
  t.equal(fail('internal').message, 'Internal server error')
  t.equal(fail('internal', 'stream.open answered null').message, 'stream.open answered null')
  // Checked by the compiler (npm run typecheck), never run.
  const typeChecks = () => [
    // @ts-expect-error session_archived takes the session id
    fail('session_archived'),
    // @ts-expect-error agent_version_conflict takes a number
    fail('agent_version_conflict', '3'),
    // @ts-expect-error no such code
    fail('no_such_code'),
  ]
  t.type(typeChecks, 'function')
})

t.test('toEnvelope: headers and details by status and code', async (t) => {
  const conflict = toEnvelope(fail('session_running', 'sesn_1'), 'req_1')
  t.same(conflict, {
    status: 409,
    headers: { 'x-should-retry': 'false' },
    body: {
      type: 'error',
      error: { type: 'conflict_error', message: conflict.body.error.message, details: { error_code: 'session_running' } },
      request_id: 'req_1',
    },
  })

  const uncertain = toEnvelope(fail('outcome_uncertain', 'The request'), 'req_2')
  t.equal(uncertain.status, 504)
  t.same(uncertain.headers, { 'x-should-retry': 'false' }, 'a 504 is never retried blindly')
  t.equal(uncertain.body.error.details, undefined)

  const busy = toEnvelope(fail('store_unavailable'), 'req_3')
  t.equal(busy.status, 503)
  t.same(busy.headers, { 'retry-after-ms': '1000' })
  t.equal(busy.body.error.type, 'overloaded_error')
  t.equal(busy.body.error.details, undefined, 'a 503 sends no code')
  t.same(toEnvelope(fail('contention'), 'r').headers, { 'retry-after-ms': '500' })

  const quiet = toEnvelope(fail('invalid_cursor'), 'req_4')
  t.same(quiet.headers, {})
  t.notOk('details' in quiet.body.error, 'a code kept to the catalog sends no details')

  const bug = toEnvelope(new Error('secret path /etc/x'), 'req_5')
  t.same(
    bug,
    {
      status: 500,
      headers: {},
      body: { type: 'error', error: { type: 'api_error', message: 'Internal server error' }, request_id: 'req_5' },
    },
    'anything else is a 500 that reveals nothing',
  )

  for (const code of CODES) {
    const env = toEnvelope(make(code), 'r')
    const status = STATUS[code]
    t.equal(env.status, status, code)
    t.equal(env.body.error.type, typeOf(code), `${code}: type`)
    t.equal(env.headers['x-should-retry'], status === 409 || status === 504 ? 'false' : undefined, `${code}: x-should-retry`)
    t.equal(env.headers['retry-after-ms'], RETRY_AFTER_MS[code]?.toString(), `${code}: retry-after-ms`)
    const more = code === 'heartbeat_precondition_failed' ? { current_state: SAMPLES.heartbeat_precondition_failed[1] } : {}
    t.same(env.body.error.details, SENT.includes(code) ? { error_code: code, ...more } : undefined, `${code}: details`)
  }
})

t.test('a memory path conflict names the path and memory that blocked it on the error object', async (t) => {
  const env = toEnvelope(fail('memory_path_conflict', 'path', '/notes/todo.md', '/notes', 'mem_1'), 'r')
  t.equal(env.status, 409)
  t.equal(env.body.error.type, 'memory_path_conflict_error')
  t.equal(env.body.error.conflicting_path, '/notes')
  t.equal(env.body.error.conflicting_memory_id, 'mem_1')
  t.match(env.body.error.message, /^path: "\/notes\/todo.md" overlaps "\/notes"/)
  const back = new ApiError(structuredClone(fail('memory_path_conflict', 'path', '/a', '/a', 'mem_2').toData()))
  t.same(toEnvelope(back, 'r').body.error.conflicting_path, '/a', 'the fields survive the hop between actor and gateway')
})

t.test('an error survives the hop between actor and gateway', async (t) => {
  const e = fail('environment_in_use', 'env_1', 2)
  const back = new ApiError(structuredClone(e.toData()))
  t.same(toEnvelope(back, 'r'), toEnvelope(e, 'r'))
  t.equal(back.reason, 'environment_in_use')
})

t.test('inField names the body field of a 404 and passes anything else through', async (t) => {
  const named = await Promise.reject(fail('environment_not_found', 'env_1'))
    .catch(inField('environment_id'))
    .catch((e) => e)
  t.equal(named.message, 'environment_id: Environment env_1 not found')
  t.equal(named.code, 'environment_not_found')
  const other = fail('environment_archived', 'env_1')
  t.equal(
    await Promise.reject(other)
      .catch(inField('environment_id'))
      .catch((e) => e),
    other,
  )
})
