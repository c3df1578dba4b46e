import t, { type Test } from 'tap'
import { ApiError } from '../../protocol/errors/api-error.js'
import { ID_MAX_LENGTH } from '../../protocol/ids.js'
import { PATH_ID_PREFIX, ROUTES, type Route } from '../../protocol/routes/index.js'
import { Router } from '../../gateway/router.js'

/**
 * The gateway router over the real route table, without any server: what it matches, the params it hands on,
 * what it refuses and how. `undefined` from match() plus an empty methodsFor() is the server's 404; a non-empty
 * methodsFor() is its 405 (gateway/server.ts adds HEAD wherever GET is). The adapters split the query string off
 * before the router sees the path.
 */

const router = new Router(ROUTES)

// A well-formed id for every path parameter of the table, so a kind added later is covered without editing this.
// A sub id with a shape of its own (a skill version's number) gets a value of that shape.
const IDS: Record<string, string> = Object.fromEntries(
  Object.entries(PATH_ID_PREFIX).map(([param, id]) => [param, id.check ? '12' : `${id.prefix}_01HZX8Q2V3W4Y5Z6A7B8C9D0EF`]),
)

const paramsOf = (path: string) => [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!)
const concrete = (path: string, ids: Record<string, string> = IDS) => path.replace(/\{(\w+)\}/g, (_, p: string) => ids[p]!)

/** Runs `fn`, which must throw; returns what it threw. */
function thrown(fn: () => unknown): unknown {
  try {
    fn()
  } catch (e) {
    return e
  }
  return undefined
}

function expect404(t: Test, method: string, path: string, message: string) {
  const e = thrown(() => router.match(method, path))
  t.ok(e instanceof ApiError, `${method} ${path}: an ApiError, not ${e instanceof Error ? e.name : typeof e}`)
  t.match(e, { status: 404, type: 'not_found_error', message }, `${method} ${path}`)
}

t.test('the table: every path parameter has a known id prefix; no two routes share method and path', async (t) => {
  const seen = new Set<string>()
  for (const r of ROUTES) {
    for (const p of paramsOf(r.path)) t.ok(PATH_ID_PREFIX[p], `${r.path}: {${p}} has an id prefix`)
    const k = `${r.method} ${r.path}`
    t.notOk(seen.has(k), `${k} is unique`)
    seen.add(k)
  }
  t.ok(ROUTES.length >= 21, 'every route of agents, environments and sessions is there')
})

t.test('every route matches its own method and path, with its params extracted', async (t) => {
  for (const r of ROUTES) {
    const path = concrete(r.path)
    const m = router.match(r.method, path)
    t.equal(m?.route, r, `${r.method} ${path} → ${r.operationId}`)
    t.same(m?.params, Object.fromEntries(paramsOf(r.path).map((p) => [p, IDS[p]])), `${r.operationId}: params`)
    t.ok(router.methodsFor(path).includes(r.method), `${r.operationId}: methodsFor lists ${r.method}`)
  }
})

t.test('a trailing slash is the same path; a second one is an empty segment', async (t) => {
  for (const r of ROUTES) {
    const path = concrete(r.path)
    t.equal(router.match(r.method, `${path}/`)?.route, r, `${r.method} ${path}/`)
  }
  // `/v1/agents//` reads as /v1/agents/{agent_id} with an empty id: a 404 for that id, not a crash.
  expect404(t, 'GET', '/v1/agents//', 'Agent  not found')
  expect404(t, 'GET', '/v1/sessions//', 'Session  not found')
})

t.test('ids may be any well-formed id of the kind, up to the length limit', async (t) => {
  for (const id of ['agent_x', 'agent_a-b_c', `agent_${'A'.repeat(ID_MAX_LENGTH - 'agent_'.length)}`, 'agent_0']) {
    t.same(router.match('GET', `/v1/agents/${id}`)?.params, { agent_id: id }, `${id.length} chars: ${id.slice(0, 20)}`)
  }
  // Percent-encoded characters are decoded before the check.
  t.same(router.match('GET', '/v1/agents/agent%5Fabc')?.params, { agent_id: 'agent_abc' })
  t.same(router.match('GET', '/v1/sessions/sesn_%41%42/events')?.params, { session_id: 'sesn_AB' })
})

t.test('literal segments win over parameters: …/events/stream is the stream, not an id', async (t) => {
  const path = concrete('/v1/sessions/{session_id}/events/stream')
  const m = router.match('GET', path)
  t.equal(m?.route.operationId, 'sessions.events.stream')
  t.equal(m?.route.stream, true)
  // Whatever the table's order, a router built from it reversed agrees.
  const reversed = new Router([...ROUTES].reverse())
  for (const r of ROUTES) t.equal(reversed.match(r.method, concrete(r.path))?.route, r, `reversed: ${r.operationId}`)
})

t.test('unknown paths: no match and no methods (the server answers 404)', async (t) => {
  const paths = [
    '',
    '/',
    '/v1',
    '/v1/',
    '/v2/agents',
    '/V1/agents',
    '/v1/Agents',
    '/v1/agent',
    '/v1/nope',
    '/v1/agents/agent_1/nope',
    '/v1/agents/agent_1/versions/1',
    '/v1/sessions/sesn_1/events/stream/more',
    '/v1/sessions/sesn_1/threads/sthr_1/more',
    '/v1//agents',
    '//v1/agents',
    'v1/agents',
    '/healthz',
    '/openapi.yaml',
  ]
  for (const path of paths) {
    for (const method of ['GET', 'POST', 'DELETE', 'PUT']) t.equal(router.match(method, path), undefined, `${method} ${JSON.stringify(path)}`)
    t.same(router.methodsFor(path), [], `${JSON.stringify(path)}: no methods`)
  }
})

t.test('the router matches paths only: a query string left on is not stripped', async (t) => {
  t.equal(router.match('GET', '/v1/agents?limit=1'), undefined)
  t.equal(router.match('GET', '/v1/agents#x'), undefined)
})

t.test('known paths under other methods: the methods they have (the server answers 405 with Allow)', async (t) => {
  const cases: Array<[string, string, string[]]> = [
    ['PUT', '/v1/agents', ['GET', 'POST']],
    ['DELETE', '/v1/agents', ['GET', 'POST']],
    ['DELETE', concrete('/v1/agents/{agent_id}'), ['GET', 'POST']],
    ['GET', concrete('/v1/agents/{agent_id}/archive'), ['POST']],
    ['POST', concrete('/v1/agents/{agent_id}/versions'), ['GET']],
    ['PATCH', '/v1/environments', ['GET', 'POST']],
    ['PUT', concrete('/v1/environments/{environment_id}'), ['DELETE', 'GET', 'POST']],
    ['GET', concrete('/v1/environments/{environment_id}/archive'), ['POST']],
    ['PUT', '/v1/sessions', ['GET', 'POST']],
    ['PATCH', concrete('/v1/sessions/{session_id}'), ['DELETE', 'GET', 'POST']],
    ['GET', concrete('/v1/sessions/{session_id}/archive'), ['POST']],
    ['DELETE', concrete('/v1/sessions/{session_id}/events'), ['GET', 'POST']],
    ['POST', concrete('/v1/sessions/{session_id}/events/stream'), ['GET']],
    ['PUT', concrete('/v1/sessions/{session_id}/resources/{resource_id}'), ['DELETE', 'GET', 'POST']],
    ['DELETE', concrete('/v1/sessions/{session_id}/resources'), ['GET', 'POST']],
    // HEAD is the server's business (it routes HEAD as GET): the router itself has no HEAD route.
    ['HEAD', '/v1/agents', ['GET', 'POST']],
  ]
  for (const [method, path, methods] of cases) {
    t.equal(router.match(method, path), undefined, `${method} ${path}: no match`)
    t.same([...router.methodsFor(path)].sort(), methods, `${method} ${path}: ${methods.join(', ')}`)
  }
  // In table order: the order in which each method first appears in the route table.
  const firstSeen = [...new Set(ROUTES.map((r) => r.method))]
  const got = router.methodsFor(concrete('/v1/sessions/{session_id}'))
  t.same(
    got,
    firstSeen.filter((m) => got.includes(m)),
  )
})

t.test('methodsFor does not look at ids: a malformed id under the wrong method is still a 405, not a 404', async (t) => {
  t.equal(router.match('DELETE', '/v1/agents/not-an-agent-id'), undefined)
  t.same([...router.methodsFor('/v1/agents/not-an-agent-id')].sort(), ['GET', 'POST'])
  t.same([...router.methodsFor('/v1/sessions/%E0%A4%A/events')].sort(), ['GET', 'POST'])
})

t.test('an id with the wrong prefix or shape is a 404 naming the resource, before anything is asked', async (t) => {
  const cases: Array<[string, string, string]> = [
    ['GET', '/v1/agents/env_01ABC', 'Agent env_01ABC not found'],
    ['POST', '/v1/agents/sesn_01ABC', 'Agent sesn_01ABC not found'],
    ['POST', '/v1/agents/agent/archive', 'Agent agent not found'],
    ['GET', '/v1/agents/agent_', 'Agent agent_ not found'],
    ['GET', '/v1/agents/AGENT_01ABC', 'Agent AGENT_01ABC not found'],
    ['GET', '/v1/agents/agent-01ABC', 'Agent agent-01ABC not found'],
    ['GET', '/v1/agents/agent__x', 'Agent agent__x not found'],
    ['GET', '/v1/agents/agent_-x', 'Agent agent_-x not found'],
    ['GET', '/v1/agents/agentx_1', 'Agent agentx_1 not found'],
    ['GET', '/v1/environments/agent_01ABC', 'Environment agent_01ABC not found'],
    ['DELETE', '/v1/environments/envx', 'Environment envx not found'],
    ['GET', '/v1/sessions/env_1', 'Session env_1 not found'],
    ['POST', '/v1/sessions/agent_1/events', 'Session agent_1 not found'],
    ['GET', '/v1/sessions/session_1/events/stream', 'Session session_1 not found'],
    ['DELETE', '/v1/sessions/sesn_1.2', 'Session sesn_1.2 not found'],
    ['GET', '/v1/sessions/sesn_*', 'Session sesn_* not found'],
    ['GET', '/v1/sessions/sesn_>', 'Session sesn_> not found'],
    // A second path id is checked as the first (its own prefix; the first is checked before it).
    ['GET', '/v1/sessions/sesn_1/resources/file_1', 'Session resource file_1 not found'],
    ['DELETE', '/v1/sessions/sesn_1/resources/sesrsc_1.x', 'Session resource sesrsc_1.x not found'],
    ['POST', '/v1/sessions/sesn_1/resources/sesn_1', 'Session resource sesn_1 not found'],
    ['GET', '/v1/sessions/sesrsc_1/resources/sesrsc_1', 'Session sesrsc_1 not found'],
  ]
  for (const [method, path, message] of cases) expect404(t, method, path, message)
})

t.test('ids that decode to characters unsafe for subjects and keys are 404s', async (t) => {
  expect404(t, 'GET', '/v1/agents/agent_a%2Fb', 'Agent agent_a/b not found')
  expect404(t, 'GET', '/v1/agents/agent_a%2Eb', 'Agent agent_a.b not found')
  expect404(t, 'GET', '/v1/agents/agent_a%20b', 'Agent agent_a b not found')
  expect404(t, 'GET', '/v1/agents/agent_a%00', 'Agent agent_a\u0000 not found')
  expect404(t, 'GET', '/v1/agents/agent_%C3%A9', 'Agent agent_é not found')
  expect404(t, 'GET', '/v1/agents/agent_a%2A', 'Agent agent_a* not found')
})

t.test('malformed percent-encoding is a 404 for the id as sent, never a URIError', async (t) => {
  for (const [method, path, id] of [
    ['GET', '/v1/agents/%E0%A4%A', '%E0%A4%A'],
    ['GET', '/v1/agents/agent_%', 'agent_%'],
    ['GET', '/v1/agents/agent_%G1', 'agent_%G1'],
    ['POST', '/v1/sessions/sesn_%ZZ/events', 'sesn_%ZZ'],
    ['GET', '/v1/environments/env_%C3', 'env_%C3'],
    ['GET', '/v1/sessions/%/events/stream', '%'],
  ] as const) {
    const kind = path.includes('/agents/') ? 'Agent' : path.includes('/environments/') ? 'Environment' : 'Session'
    expect404(t, method, path, `${kind} ${id} not found`)
  }
})

t.test('a long id is cut to 64 characters in the 404 message; one over the length limit is a 404', async (t) => {
  const long = `agent_${'x'.repeat(ID_MAX_LENGTH - 'agent_'.length + 1)}`
  t.equal(long.length, ID_MAX_LENGTH + 1)
  expect404(t, 'GET', `/v1/agents/${long}`, `Agent ${long.slice(0, 64)}… not found`)
  const wrong = `env_${'y'.repeat(100)}`
  const e = thrown(() => router.match('GET', `/v1/agents/${wrong}`)) as ApiError
  t.equal(e.message, `Agent ${wrong.slice(0, 64)}… not found`)
  const exactly64 = `env_${'z'.repeat(60)}`
  t.equal((thrown(() => router.match('GET', `/v1/agents/${exactly64}`)) as ApiError).message, `Agent ${exactly64} not found`, '64 characters: not cut')
})

t.test('a route table without id parameters matches anything in a parameter segment', async (t) => {
  // Built from a real route, so the test does not depend on how a route names what it calls.
  const r: Route = { ...ROUTES[0]!, method: 'GET', path: '/x/{thing}/y', operationId: 'x' }
  const small = new Router([r])
  t.same(small.match('GET', '/x/anything%20at%20all/y')?.params, { thing: 'anything at all' })
  t.same(small.match('GET', '/x/%E0%A4%A/y')?.params, { thing: '%E0%A4%A' }, 'a malformed escape stays as sent')
  t.equal(small.match('POST', '/x/a/y'), undefined)
  t.same(small.methodsFor('/x/a/y'), ['GET'])
})

t.test('the second path id reaches the params beside the first', async (t) => {
  const m = router.match('GET', '/v1/sessions/sesn_1/resources/sesrsc_2')
  t.equal(m?.route.operationId, 'sessions.resources.retrieve')
  t.same(m?.params, { session_id: 'sesn_1', resource_id: 'sesrsc_2' })
  t.equal(PATH_ID_PREFIX.resource_id?.prefix, 'sesrsc', 'declared by the op (OpSpec.sub), not by a kind')
})

t.test('partitioned subjects parse back into what built them', async (t) => {
  const { parsePartitionedSubject, partitionedSubject, partitionOf } = await import('../../protocol/subjects.js')
  const id = 'sesn_01ABCDEFGHJKMNPQRSTVWXYZ0'
  t.same(parsePartitionedSubject(partitionedSubject('session', id, 'events.send')), { kind: 'session', partition: partitionOf(id), id, op: 'events.send' })
  t.equal(parsePartitionedSubject('troupe.session.list'), undefined)
  t.equal(parsePartitionedSubject('troupe.session.p7.x.get'), undefined)
})
