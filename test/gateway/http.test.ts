import t from 'tap'
import net from 'node:net'
import { stack } from '../helpers/stack.js'
import { raw } from '../helpers/troupe.js'

const s = await stack()

/** Sends raw bytes and returns the response head (status line + headers) the server wrote. */
function rawHttp(url: string, head: string, body?: Buffer | string): Promise<string> {
  const { hostname, port } = new URL(url)
  return new Promise((resolve, reject) => {
    const sock = net.connect(Number(port), hostname)
    let got = ''
    sock.on('data', (d) => {
      got += d
      if (got.includes('\r\n\r\n')) {
        sock.destroy()
        resolve(got)
      }
    })
    sock.on('error', (e) => (got ? resolve(got) : reject(e)))
    sock.on('close', () => resolve(got))
    sock.write(head)
    if (body) sock.write(body)
  })
}

t.test('health, readiness, request ids', async (t) => {
  const h = await raw(s.url, 'GET', '/healthz')
  t.equal(h.status, 200)
  t.match(h.headers.get('request-id'), /^req_/)
  const r = await raw(s.url, 'GET', '/readyz')
  t.equal(r.status, 200)
  t.same(r.json.checks, { nats: true, jetstream: true, actor_host: true, placement: true })
})

t.test('unknown route is a 404 envelope', async (t) => {
  const r = await raw(s.url, 'GET', '/v1/nope')
  t.equal(r.status, 404)
  t.equal(r.json.type, 'error')
  t.equal(r.json.error.type, 'not_found_error')
  t.match(r.json.request_id, /^req_/)
  t.equal(r.headers.get('request-id'), r.json.request_id)
  const wrongPrefix = await raw(s.url, 'GET', '/v1/environments/agent_123')
  t.equal(wrongPrefix.status, 404)
})

t.test('invalid JSON and unknown fields are 400s naming the problem', async (t) => {
  const bad = await raw(s.url, 'POST', '/v1/environments', '{"name":')
  t.equal(bad.status, 400)
  t.equal(bad.json.error.type, 'invalid_request_error')
  t.match(bad.json.error.message, /not valid JSON/)
  const unknown = await raw(s.url, 'POST', '/v1/environments', { name: 'x', colour: 'red' })
  t.equal(unknown.status, 400)
  t.match(unknown.json.error.message, /colour/)
  const notObject = await raw(s.url, 'POST', '/v1/environments', '[1,2]')
  t.equal(notObject.status, 400)
  const wrongType = await raw(s.url, 'POST', '/v1/environments', { name: 7 })
  t.equal(wrongType.status, 400)
  t.match(wrongType.json.error.message, /name must be a string/)
})

t.test('bodies over 32 MiB get 413 without being read', async (t) => {
  const declared = await rawHttp(
    s.url,
    `POST /v1/environments HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\ncontent-length: ${40 * 1024 * 1024}\r\n\r\n`,
  )
  t.match(declared, /^HTTP\/1\.1 413/)
  t.match(declared, /request-id: req_/)
  // Chunked: no declared length, so the limit trips while reading.
  const chunk = Buffer.alloc(1024 * 1024, 0x20)
  const { hostname, port } = new URL(s.url)
  const status = await new Promise<string>((resolve) => {
    const sock = net.connect(Number(port), hostname)
    let got = ''
    let stop = false
    sock.on('data', (d) => {
      got += d
      stop = true
      sock.destroy()
      resolve(got)
    })
    sock.on('error', () => resolve(got))
    sock.write('POST /v1/environments HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n')
    const pump = (i: number) => {
      if (stop || i > 40) return
      sock.write(`${chunk.length.toString(16)}\r\n`)
      sock.write(chunk)
      sock.write('\r\n', () => setImmediate(() => pump(i + 1)))
    }
    pump(0)
  })
  t.match(status, /^HTTP\/1\.1 413/)
  const after = await raw(s.url, 'GET', '/healthz')
  t.equal(after.status, 200, 'server still fine')
})

t.test('a body just under the limit is read', async (t) => {
  const big = JSON.stringify({ name: 'big', description: 'x'.repeat(1024 * 1024) })
  const r = await raw(s.url, 'POST', '/v1/environments', big)
  t.equal(r.status, 200)
})

/** Every route the server has, written out: the OpenAPI inventory is generated from the route table under test. */
const SERVED: ReadonlyArray<readonly [string, string, string]> = [
  ['post', '/v1/agents', 'agents.create'],
  ['get', '/v1/agents', 'agents.list'],
  ['get', '/v1/agents/{agent_id}', 'agents.retrieve'],
  ['post', '/v1/agents/{agent_id}', 'agents.update'],
  ['post', '/v1/agents/{agent_id}/archive', 'agents.archive'],
  ['get', '/v1/agents/{agent_id}/versions', 'agents.versions.list'],
  ['post', '/v1/environments', 'environments.create'],
  ['get', '/v1/environments', 'environments.list'],
  ['get', '/v1/environments/{environment_id}', 'environments.retrieve'],
  ['post', '/v1/environments/{environment_id}', 'environments.update'],
  ['post', '/v1/environments/{environment_id}/archive', 'environments.archive'],
  ['delete', '/v1/environments/{environment_id}', 'environments.delete'],
  ['post', '/v1/sessions', 'sessions.create'],
  ['get', '/v1/sessions', 'sessions.list'],
  ['get', '/v1/sessions/{session_id}', 'sessions.retrieve'],
  ['post', '/v1/sessions/{session_id}', 'sessions.update'],
  ['delete', '/v1/sessions/{session_id}', 'sessions.delete'],
  ['post', '/v1/sessions/{session_id}/archive', 'sessions.archive'],
  ['post', '/v1/sessions/{session_id}/events', 'sessions.events.send'],
  ['get', '/v1/sessions/{session_id}/events', 'sessions.events.list'],
  ['get', '/v1/sessions/{session_id}/events/stream', 'sessions.events.stream'],
  ['get', '/v1/sessions/{session_id}/resources', 'sessions.resources.list'],
  ['post', '/v1/sessions/{session_id}/resources', 'sessions.resources.add'],
  ['get', '/v1/sessions/{session_id}/resources/{resource_id}', 'sessions.resources.retrieve'],
  ['post', '/v1/sessions/{session_id}/resources/{resource_id}', 'sessions.resources.update'],
  ['delete', '/v1/sessions/{session_id}/resources/{resource_id}', 'sessions.resources.delete'],
  ['get', '/v1/sessions/{session_id}/threads', 'sessions.threads.list'],
  ['get', '/v1/sessions/{session_id}/threads/{thread_id}', 'sessions.threads.retrieve'],
  ['post', '/v1/sessions/{session_id}/threads/{thread_id}/archive', 'sessions.threads.archive'],
  ['get', '/v1/sessions/{session_id}/threads/{thread_id}/events', 'sessions.threads.events.list'],
  ['get', '/v1/sessions/{session_id}/threads/{thread_id}/stream', 'sessions.threads.stream'],
  ['post', '/v1/deployments', 'deployments.create'],
  ['get', '/v1/deployments', 'deployments.list'],
  ['get', '/v1/deployments/{deployment_id}', 'deployments.retrieve'],
  ['post', '/v1/deployments/{deployment_id}', 'deployments.update'],
  ['post', '/v1/deployments/{deployment_id}/pause', 'deployments.pause'],
  ['post', '/v1/deployments/{deployment_id}/unpause', 'deployments.unpause'],
  ['post', '/v1/deployments/{deployment_id}/archive', 'deployments.archive'],
  ['post', '/v1/deployments/{deployment_id}/run', 'deployments.run'],
  ['get', '/v1/deployment_runs', 'deployment_runs.list'],
  ['get', '/v1/deployment_runs/{deployment_run_id}', 'deployment_runs.retrieve'],
  ['post', '/v1/files', 'files.upload'],
  ['get', '/v1/files', 'files.list'],
  ['get', '/v1/files/{file_id}', 'files.retrieveMetadata'],
  ['get', '/v1/files/{file_id}/content', 'files.download'],
  ['delete', '/v1/files/{file_id}', 'files.delete'],
  ['post', '/v1/vaults', 'vaults.create'],
  ['get', '/v1/vaults', 'vaults.list'],
  ['get', '/v1/vaults/{vault_id}', 'vaults.retrieve'],
  ['post', '/v1/vaults/{vault_id}', 'vaults.update'],
  ['delete', '/v1/vaults/{vault_id}', 'vaults.delete'],
  ['post', '/v1/vaults/{vault_id}/archive', 'vaults.archive'],
  ['post', '/v1/vaults/{vault_id}/credentials', 'vaults.credentials.create'],
  ['get', '/v1/vaults/{vault_id}/credentials', 'vaults.credentials.list'],
  ['get', '/v1/vaults/{vault_id}/credentials/{credential_id}', 'vaults.credentials.retrieve'],
  ['post', '/v1/vaults/{vault_id}/credentials/{credential_id}', 'vaults.credentials.update'],
  ['delete', '/v1/vaults/{vault_id}/credentials/{credential_id}', 'vaults.credentials.delete'],
  ['post', '/v1/vaults/{vault_id}/credentials/{credential_id}/archive', 'vaults.credentials.archive'],
  ['post', '/v1/vaults/{vault_id}/credentials/{credential_id}/mcp_oauth_validate', 'vaults.credentials.mcpOAuthValidate'],
  ['post', '/v1/webhooks', 'webhooks.create'],
  ['get', '/v1/webhooks', 'webhooks.list'],
  ['get', '/v1/webhooks/{webhook_id}', 'webhooks.retrieve'],
  ['post', '/v1/webhooks/{webhook_id}', 'webhooks.update'],
  ['delete', '/v1/webhooks/{webhook_id}', 'webhooks.delete'],
  ['post', '/v1/webhooks/{webhook_id}/regenerate_signing_secret', 'webhooks.regenerateSigningSecret'],
  ['post', '/v1/skills', 'skills.create'],
  ['get', '/v1/skills', 'skills.list'],
  ['get', '/v1/skills/{skill_id}', 'skills.retrieve'],
  ['delete', '/v1/skills/{skill_id}', 'skills.delete'],
  ['post', '/v1/skills/{skill_id}/versions', 'skills.versions.create'],
  ['get', '/v1/skills/{skill_id}/versions', 'skills.versions.list'],
  ['get', '/v1/skills/{skill_id}/versions/{version}', 'skills.versions.retrieve'],
  ['get', '/v1/skills/{skill_id}/versions/{version}/content', 'skills.versions.download'],
  ['delete', '/v1/skills/{skill_id}/versions/{version}', 'skills.versions.delete'],
  ['get', '/v1/environments/{environment_id}/work/poll', 'environments.work.poll'],
  ['get', '/v1/environments/{environment_id}/work/stats', 'environments.work.stats'],
  ['get', '/v1/environments/{environment_id}/work', 'environments.work.list'],
  ['get', '/v1/environments/{environment_id}/work/{work_id}', 'environments.work.retrieve'],
  ['post', '/v1/environments/{environment_id}/work/{work_id}', 'environments.work.update'],
  ['post', '/v1/environments/{environment_id}/work/{work_id}/ack', 'environments.work.ack'],
  ['post', '/v1/environments/{environment_id}/work/{work_id}/heartbeat', 'environments.work.heartbeat'],
  ['post', '/v1/environments/{environment_id}/work/{work_id}/stop', 'environments.work.stop'],
  ['post', '/v1/memory_stores', 'memoryStores.create'],
  ['get', '/v1/memory_stores', 'memoryStores.list'],
  ['get', '/v1/memory_stores/{memory_store_id}', 'memoryStores.retrieve'],
  ['post', '/v1/memory_stores/{memory_store_id}', 'memoryStores.update'],
  ['delete', '/v1/memory_stores/{memory_store_id}', 'memoryStores.delete'],
  ['post', '/v1/memory_stores/{memory_store_id}/archive', 'memoryStores.archive'],
  ['post', '/v1/memory_stores/{memory_store_id}/memories', 'memoryStores.memories.create'],
  ['get', '/v1/memory_stores/{memory_store_id}/memories', 'memoryStores.memories.list'],
  ['get', '/v1/memory_stores/{memory_store_id}/memories/{memory_id}', 'memoryStores.memories.retrieve'],
  ['post', '/v1/memory_stores/{memory_store_id}/memories/{memory_id}', 'memoryStores.memories.update'],
  ['delete', '/v1/memory_stores/{memory_store_id}/memories/{memory_id}', 'memoryStores.memories.delete'],
  ['get', '/v1/memory_stores/{memory_store_id}/memory_versions', 'memoryStores.memoryVersions.list'],
  ['get', '/v1/memory_stores/{memory_store_id}/memory_versions/{memory_version_id}', 'memoryStores.memoryVersions.retrieve'],
  ['post', '/v1/memory_stores/{memory_store_id}/memory_versions/{memory_version_id}/redact', 'memoryStores.memoryVersions.redact'],
  ['post', '/v1/dreams', 'dreams.create'],
  ['get', '/v1/dreams', 'dreams.list'],
  ['get', '/v1/dreams/{dream_id}', 'dreams.retrieve'],
  ['post', '/v1/dreams/{dream_id}/archive', 'dreams.archive'],
  ['post', '/v1/dreams/{dream_id}/cancel', 'dreams.cancel'],
  ['post', '/v1/admin/api_keys', 'admin.apiKeys.create'],
  ['get', '/v1/admin/api_keys', 'admin.apiKeys.list'],
  ['get', '/v1/admin/api_keys/{api_key_id}', 'admin.apiKeys.retrieve'],
  ['post', '/v1/admin/api_keys/{api_key_id}', 'admin.apiKeys.update'],
  ['post', '/v1/admin/api_keys/{api_key_id}/rotate', 'admin.apiKeys.rotate'],
  ['post', '/v1/admin/api_keys/{api_key_id}/revoke', 'admin.apiKeys.revoke'],
  ['get', '/healthz', 'health'],
  ['get', '/readyz', 'ready'],
  ['get', '/openapi.yaml', 'openapi'],
  ['get', '/metrics', 'metrics'],
]

t.test('openapi lists exactly the served routes', async (t) => {
  const r = await raw(s.url, 'GET', '/openapi.yaml')
  t.equal(r.status, 200)
  t.match(r.headers.get('content-type'), /yaml/)
  // `  "<path>":`, then per method `    <method>:` and `      operationId: "<id>"`.
  const listed: string[] = []
  let path = ''
  let method = ''
  for (const line of r.text.split('\n')) {
    const p = /^ {2}"([^"]+)":$/.exec(line)
    const m = /^ {4}([a-z]+):$/.exec(line)
    const o = /^ {6}operationId: "([^"]+)"$/.exec(line)
    if (p) path = p[1]!
    else if (m) method = m[1]!
    else if (o) listed.push(`${method} ${path} ${o[1]}`)
  }
  t.same(listed.sort(), SERVED.map((x) => x.join(' ')).sort(), 'every route, each once, nothing else')
  // And each is served: a route the server lacks is a 404 "No route" or a 405, whatever the id names.
  const ids: Record<string, string> = {
    agent_id: 'agent_01HZZZZZZZZZZZZZZZZZZZZZZZ',
    environment_id: 'env_01HZZZZZZZZZZZZZZZZZZZZZZZ',
    session_id: 'sesn_01HZZZZZZZZZZZZZZZZZZZZZZZ',
    deployment_id: 'depl_01HZZZZZZZZZZZZZZZZZZZZZZZ',
    deployment_run_id: 'drun_01HZZZZZZZZZZZZZZZZZZZZZZZ',
    file_id: 'file_01HZZZZZZZZZZZZZZZZZZZZZZZ',
    skill_id: 'skill_01HZZZZZZZZZZZZZZZZZZZZZZZ',
    api_key_id: 'apikey_01HZZZZZZZZZZZZZZZZZZZZZZZ',
    version: '1',
  }
  for (const [m, p] of SERVED) {
    const url = p.replace(/\{(\w+)\}/g, (_, name: string) => ids[name]!)
    const res = await fetch(`${s.url}${url}`, {
      method: m.toUpperCase(),
      ...(m === 'get' ? {} : { body: '{}', headers: { 'content-type': 'application/json' } }),
    })
    const text = await res.text()
    t.ok(res.status !== 405 && !text.includes('No route for'), `${m.toUpperCase()} ${p} is routed (${res.status})`)
  }
})

t.test('default mode accepts requests without compatibility headers', async (t) => {
  const r = await fetch(`${s.url}/v1/environments`, { method: 'POST', body: JSON.stringify({ name: 'plain' }) })
  t.equal(r.status, 200)
})
