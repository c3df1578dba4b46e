// A JetStream cluster that loses quorum: requests that need the store answer 503 with retry-after-ms (which the
// official client retries by itself), never a 500, and the same requests succeed once the servers are back.
import t from 'tap'
import '../helpers/keepalive.js'
import { startFakeModelServer } from '../fakes/model-server.js'
import { startNatsCluster } from '../helpers/nats-cluster.js'
import { clientFor, startTroupe } from '../helpers/troupe.js'
import { until } from '../helpers/wait.js'

const HEADERS = { 'x-api-key': 'k', 'anthropic-version': '2023-06-01', 'anthropic-beta': 'managed-agents-2026-04-01' }

interface Answer {
  status: number
  retryAfter: string | null
  type?: string
  message?: string
  shouldRetry: string | null
}

/** One raw request: the official client would retry a 503 and hide it. */
async function ask(base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const init: RequestInit = { method, headers: { ...HEADERS, ...headers }, signal: AbortSignal.timeout(60_000) }
  if (body !== undefined) {
    init.body = JSON.stringify(body)
    ;(init.headers as Record<string, string>)['content-type'] = 'application/json'
  }
  const res = await fetch(base + path, init)
  const json = (await res.json().catch(() => undefined)) as any
  return {
    status: res.status,
    retryAfter: res.headers.get('retry-after-ms'),
    type: json?.error?.type,
    message: json?.error?.message,
    shouldRetry: res.headers.get('x-should-retry'),
  }
}

// Each phase waits for conditions (bounded): a cluster forming, a lost leader's requests timing out (5 s each), the
// streams electing leaders again. That can outlast the runner's default 120 s on a loaded machine.
t.setTimeout(300_000)

const model = await startFakeModelServer()
const cluster = await startNatsCluster({ size: 3 })
const server = await startTroupe({
  natsUrl: cluster.url,
  env: { TROUPE_REPLICAS: '3', TROUPE_MODEL_BASE_URL: model.url, ANTHROPIC_API_KEY: 'k', TROUPE_MODEL_RETRY_BASE_MS: '20' },
})
t.teardown(async () => {
  server.killNow()
  await cluster.stop()
  await model.close()
})

t.test('quorum lost: 503 with retry-after-ms, never 500; back to normal once the servers return', async (t) => {
  const client = clientFor(server.url, { maxRetries: 6 })
  const agent = await client.beta.agents.create({ name: 'steady', model: 'claude-sonnet-4-5' })
  const environment = await client.beta.environments.create({ name: 'steady' })
  const session = await client.beta.sessions.create({ agent: agent.id, environment_id: environment.id } as any)

  const say = { events: [{ type: 'user.message', content: [{ type: 'text', text: 'hello' }] }] }
  // These need a JetStream quorum: CAS creates, a stream append, and everything partitioned (an owner serves only
  // while its heartbeat, a KV write, is fresh).
  // Creates carry an Idempotency-Key: a write that timed out may still land, and only with a key is retrying it safe
  // (without one such a create is a 504 the client must not retry; checked below).
  const keyed = (k: string) => ({ 'idempotency-key': k })
  const requests: Array<[string, string, string, unknown?, Record<string, string>?]> = [
    ['get agent', 'GET', `/v1/agents/${agent.id}`],
    ['get session', 'GET', `/v1/sessions/${session.id}`],
    ['create agent', 'POST', '/v1/agents', { name: 'during', model: 'claude-sonnet-4-5' }, keyed('agent-during')],
    ['create environment', 'POST', '/v1/environments', { name: 'during' }, keyed('env-during')],
    ['send user.message', 'POST', `/v1/sessions/${session.id}/events`, say],
  ]
  // These only read, and nats-server lets a lone replica answer reads without a quorum (a direct get; a stream
  // info for a list's freshness barrier), with what was committed before the fault: each may be a 200 (or a 503
  // while the fault sets in: a request to a leader that just vanished times out), never a 500.
  const readable: Array<[string, string, string]> = [
    ['get environment', 'GET', `/v1/environments/${environment.id}`],
    ['list agents', 'GET', '/v1/agents'],
    ['list sessions', 'GET', '/v1/sessions'],
    ['list environments', 'GET', '/v1/environments'],
  ]
  const logsBefore = server.logs().length

  const [, second, third] = cluster.nodes
  await Promise.all([second!.kill(), third!.kill()])

  // As the fault sets in: a read asked of a stream leader that just vanished times out (503), or a replica answers.
  const early = await Promise.all(readable.map(([, method, path]) => ask(server.url, method, path)))
  readable.forEach(([name], i) => {
    const a = early[i]!
    t.ok(a.status === 200 || (a.status === 503 && a.retryAfter), `${name} as the fault sets in: 200 or 503 (${a.status} ${a.message ?? ''})`)
  })

  // Until the host notices its heartbeat failing, a partition owner may still answer a GET from its cache (200).
  const seen = new Map<string, number[]>()
  for (const [name, method, path, body, headers] of requests) {
    const statuses: number[] = []
    seen.set(name, statuses)
    let last: Answer | undefined
    await until(
      `${name} answers 503`,
      async () => {
        last = await ask(server.url, method, path, body, headers)
        statuses.push(last.status)
        return last.status === 503
      },
      60_000,
      200,
    ).catch((err) => {
      throw new Error(`${err.message}: ${statuses.join(' ')}, last ${JSON.stringify(last)}\n${server.logs().slice(logsBefore).slice(-4000)}`)
    })
  }
  for (const [name, statuses] of seen) {
    t.ok(
      statuses.every((s) => s === 503 || (s === 200 && name.startsWith('get'))),
      `${name}: only 503 (or a cached 200) (${statuses.join(' ')})`,
    )
  }

  // Steady outage: every request, again, is a 503 the client can retry.
  for (const [name, method, path, body, headers] of requests) {
    const a = await ask(server.url, method, path, body, headers)
    t.equal(a.status, 503, `${name}: 503 (${a.message})`)
    t.equal(a.type, 'overloaded_error', `${name}: overloaded_error`)
    t.match(a.retryAfter, /^\d+$/, `${name}: retry-after-ms`)
    // Shared kinds reach the store themselves; partitioned owners refuse earlier, their heartbeat having lapsed.
    if (name.startsWith('create')) t.match(a.message, /store is temporarily unavailable/, `${name}: says the store is unavailable`)
  }
  for (const [name, method, path] of readable) {
    const a = await ask(server.url, method, path)
    t.ok(a.status === 200 || (a.status === 503 && a.retryAfter), `${name}: 200 from a replica or 503 (${a.status} ${a.message ?? ''})`)
  }
  // Without a key, a create whose write got no answer may be stored: a 504 the client must not retry blindly.
  for (const [name, path, body] of [
    ['agent', '/v1/agents', { name: 'unkeyed', model: 'claude-sonnet-4-5' }],
    ['environment', '/v1/environments', { name: 'unkeyed' }],
  ] as const) {
    const a = await ask(server.url, 'POST', path, body)
    if (a.status === 504) {
      t.equal(a.type, 'timeout_error', `unkeyed ${name} create: timeout_error`)
      t.equal(a.shouldRetry, 'false', `unkeyed ${name} create: x-should-retry false`)
    } else t.ok(a.status === 503 && a.retryAfter, `unkeyed ${name} create: 503 when certainly not stored (${a.status} ${a.message})`)
  }
  const outageLogs = server.logs().slice(logsBefore)
  t.notMatch(outageLogs, /"msg":"actor failed"/, 'no actor failure logged as a bug during the outage')
  t.match(outageLogs, /"msg":"store temporarily unavailable"/, 'store faults logged as such')

  await Promise.all([second!.restart(), third!.restart()])
  await cluster.waitReady()

  // Back: each request succeeds again, with no 500 on the way.
  for (const [name, method, path, body, headers] of [...requests, ...readable] as typeof requests) {
    const statuses: number[] = []
    await until(
      `${name} succeeds again`,
      async () => {
        const a = await ask(server.url, method, path, body, headers)
        statuses.push(a.status)
        return a.status >= 200 && a.status < 300
      },
      90_000,
      200,
    )
    t.notOk(statuses.includes(500), `${name}: no 500 while recovering (${statuses.join(' ')})`)
  }
  const back = await client.beta.agents.retrieve(agent.id)
  t.equal(back.id, agent.id, 'the agent written before the outage is intact')
  const listed: string[] = []
  for await (const a of client.beta.agents.list()) listed.push(a.id)
  t.ok(listed.includes(agent.id), 'and listed')
})
