import { primaryThreadId } from '../../protocol/ids.js'
import { raw } from '../helpers/troupe.js'
import { get } from './harness.js'
import { FUZZ_ADMIN_KEY } from './wire.js'
import type { Victims } from './types.js'

/**
 * Canaries are resources no fuzz request names: after the run they must read back exactly as before, or
 * something hostile reached a resource it never addressed. Victims are what the requests may address and
 * damage (update, archive, delete, send events to), so mutations that happen to be valid land somewhere.
 */

export interface Canaries {
  /** Path → the JSON it read back before the run. */
  snapshots: Map<string, string>
}

/** Uploads a small file (multipart, as the official client does) and returns its id. */
async function uploadFile(url: string, name: string): Promise<string> {
  const form = new FormData()
  form.append('file', new Blob([`bytes of ${name}`], { type: 'text/plain' }), name)
  const r = await fetch(`${url}/v1/files`, { method: 'POST', body: form })
  const j = (await r.json()) as { id?: unknown }
  if (r.status !== 200 || typeof j.id !== 'string') throw new Error(`setup: upload ${name} answered ${r.status}: ${JSON.stringify(j)}`)
  return j.id
}

/** A skill of one version, uploaded as the official client sends one (`files[]` parts named by path). */
export async function uploadSkill(url: string, name: string): Promise<string> {
  const form = new FormData()
  form.append('files[]', new Blob([`---\nname: ${name}\ndescription: The ${name} skill.\n---\n\nDo ${name}.\n`]), `${name}/SKILL.md`)
  form.append('files[]', new Blob(['echo hi\n']), `${name}/run.sh`)
  const r = await fetch(`${url}/v1/skills`, { method: 'POST', body: form })
  const j = (await r.json()) as { id?: unknown }
  if (r.status !== 200 || typeof j.id !== 'string') throw new Error(`setup: skill ${name} answered ${r.status}: ${JSON.stringify(j)}`)
  return j.id
}

async function create(url: string, path: string, body: unknown): Promise<string> {
  const r = await raw(url, 'POST', path, body)
  if (r.status !== 200 || typeof r.json?.id !== 'string') throw new Error(`setup: POST ${path} answered ${r.status}: ${r.text}`)
  return r.json.id
}

/** Status and JSON as read, minus what changes with the clock alone (a session's `stats.duration_seconds`). */
async function read(url: string, path: string): Promise<string> {
  const r = await get(url, path)
  if (r.json?.stats && typeof r.json.stats === 'object') delete r.json.stats.duration_seconds
  return `${r.status} ${r.json === undefined ? r.text : JSON.stringify(r.json)}`
}

export async function createCanaries(url: string): Promise<Canaries> {
  const agent = await create(url, '/v1/agents', { name: 'canary', model: 'claude-sonnet-4-5', metadata: { canary: 'yes' } })
  const env = await create(url, '/v1/environments', { name: 'canary', metadata: { canary: 'yes' } })
  const file = await uploadFile(url, 'canary.txt')
  const resources = [{ type: 'file', file_id: file, mount_path: '/mnt/session/uploads/canary.txt' }]
  const session = await create(url, '/v1/sessions', { agent, environment_id: env, title: 'canary', metadata: { canary: 'yes' }, resources })
  // No schedule: its upcoming runs would move with the clock alone.
  const deployment = await create(url, '/v1/deployments', { ...deploymentOf(agent, env), schedule: null, name: 'canary', metadata: { canary: 'yes' } })
  const run = await create(url, `/v1/deployments/${deployment}/run`, undefined)
  const vault = await create(url, '/v1/vaults', { display_name: 'canary', metadata: { canary: 'yes' } })
  const credential = await create(url, `/v1/vaults/${vault}/credentials`, {
    auth: { type: 'static_bearer', mcp_server_url: 'https://canary.example.com/mcp', token: 'canary' },
  })
  const webhook = await create(url, '/v1/webhooks', { url: 'https://canary.example.com/hook', event_types: ['session.archived'] })
  const skill = await uploadSkill(url, 'canary')
  const store = await create(url, '/v1/memory_stores', { name: 'canary', metadata: { canary: 'yes' } })
  const memory = await create(url, `/v1/memory_stores/${store}/memories`, { path: '/canary/notes.md', content: 'canary' })
  // A self-hosted session and its queued item: no hostile token, worker id or poll may reach them.
  const workEnv = await create(url, '/v1/environments', { name: 'canary work', config: { type: 'self_hosted' }, metadata: { canary: 'yes' } })
  const workSession = await create(url, '/v1/sessions', { agent, environment_id: workEnv, title: 'canary work' })
  const paths = [
    `/v1/agents/${agent}`,
    `/v1/environments/${env}`,
    `/v1/sessions/${session}`,
    `/v1/sessions/${session}/events`,
    `/v1/sessions/${session}/resources`,
    `/v1/files?scope_id=${session}`,
    `/v1/deployments/${deployment}`,
    `/v1/deployment_runs/${run}`,
    `/v1/files/${file}`,
    `/v1/files/${file}/content`,
    `/v1/vaults/${vault}`,
    `/v1/vaults/${vault}/credentials/${credential}`,
    `/v1/webhooks/${webhook}`,
    `/v1/skills/${skill}`,
    `/v1/skills/${skill}/versions/1`,
    `/v1/skills/${skill}/versions/1/content`,
    `/v1/memory_stores/${store}`,
    `/v1/memory_stores/${store}/memories/${memory}`,
    `/v1/memory_stores/${store}/memories`,
    `/v1/memory_stores/${store}/memory_versions`,
    `/v1/environments/${workEnv}/work`,
    `/v1/sessions/${workSession}`,
  ]
  const snapshots = new Map<string, string>()
  for (const p of paths) {
    const got = await read(url, p)
    if (!got.startsWith('200 ')) throw new Error(`setup: GET ${p} answered ${got}`)
    snapshots.set(p, got)
  }
  return { snapshots }
}

/** The canaries that no longer read back the same: path, before, after. */
export async function changedCanaries(url: string, c: Canaries): Promise<Array<{ path: string; before: string; after: string }>> {
  const changed = []
  for (const [path, before] of c.snapshots) {
    const after = await read(url, path)
    if (after !== before) changed.push({ path, before, after })
  }
  return changed
}

export async function createVictims(url: string, n = 3): Promise<Victims> {
  const v: Victims = {
    agents: [],
    environments: [],
    sessions: [],
    deployments: [],
    deployment_runs: [],
    files: [],
    session_resources: [],
    session_threads: [],
    vaults: [],
    credentials: [],
    webhooks: [],
    skills: [],
    work_environments: [],
    work: [],
    work_sessions: [],
    work_tokens: [],
    memory_stores: [],
    memories: [],
    memory_versions: [],
    dreams: [],
    api_keys: [],
  }
  for (let i = 0; i < n; i++) {
    v.agents.push(await create(url, '/v1/agents', { name: `victim ${i}`, model: 'claude-sonnet-4-5' }))
    v.environments.push(await create(url, '/v1/environments', { name: `victim ${i}` }))
  }
  for (let i = 0; i < n; i++) v.sessions.push(await create(url, '/v1/sessions', { agent: v.agents[i]!, environment_id: v.environments[i]! }))
  // Each session's primary thread, whose id derives from the session's (children need a model to be made).
  v.session_threads.push(...v.sessions.map(primaryThreadId))
  for (let i = 0; i < n; i++) {
    v.deployments.push(await create(url, '/v1/deployments', { ...deploymentOf(v.agents[i]!, v.environments[i]!), name: `victim ${i}` }))
    v.deployment_runs.push(await create(url, `/v1/deployments/${v.deployments[i]!}/run`, undefined))
    v.files.push(await uploadFile(url, `victim-${i}.txt`))
  }
  for (let i = 0; i < n; i++) {
    v.session_resources.push(await create(url, `/v1/sessions/${v.sessions[i]!}/resources`, { type: 'file', file_id: v.files[i]! }))
  }
  for (let i = 0; i < n; i++) {
    v.vaults.push(await create(url, '/v1/vaults', { display_name: `victim ${i}` }))
    v.credentials.push(
      await create(url, `/v1/vaults/${v.vaults[i]!}/credentials`, {
        auth: { type: 'static_bearer', mcp_server_url: 'https://victim.example.com/mcp', token: 'victim' },
      }),
    )
  }
  for (let i = 0; i < n; i++) v.skills.push(await uploadSkill(url, `victim-${i}`))
  for (let i = 0; i < n; i++) {
    const env = await create(url, '/v1/environments', { name: `victim work ${i}`, config: { type: 'self_hosted' } })
    v.work_sessions.push(await create(url, '/v1/sessions', { agent: v.agents[i]!, environment_id: env }))
    // Handed out once, for a real sessions token to forge from (the hostile-header class).
    const polled = await raw(url, 'GET', `/v1/environments/${env}/work/poll`)
    const secret = polled.json?.secret
    if (polled.status !== 200 || typeof secret !== 'string') throw new Error(`setup: poll ${env} answered ${polled.status}: ${polled.text}`)
    v.environments.push(env)
    v.work_environments.push(env)
    v.work.push(polled.json.id)
    v.work_tokens.push(JSON.parse(Buffer.from(secret, 'base64url').toString()).sessions_token)
  }
  for (let i = 0; i < n; i++) {
    const store = await create(url, '/v1/memory_stores', { name: `victim ${i}` })
    const made = await raw(url, 'POST', `/v1/memory_stores/${store}/memories`, { path: `/victim/${i}/notes.md`, content: `victim ${i}` })
    if (made.status !== 200) throw new Error(`setup: a victim memory answered ${made.status}: ${made.text}`)
    v.memory_stores.push(store)
    v.memories.push(made.json.id)
    v.memory_versions.push(made.json.memory_version_id)
  }
  for (let i = 0; i < n; i++) {
    v.dreams.push(await create(url, '/v1/dreams', { inputs: [{ type: 'memory_store', memory_store_id: v.memory_stores[i]! }], model: 'claude-sonnet-4-5' }))
  }
  for (let i = 0; i < n; i++) {
    const made = await raw(url, 'POST', '/v1/admin/api_keys', { name: `victim ${i}` }, { 'x-api-key': FUZZ_ADMIN_KEY })
    if (made.status !== 200) throw new Error(`setup: a victim API key answered ${made.status}: ${made.text}`)
    v.api_keys.push(made.json.id)
  }
  for (let i = 0; i < n; i++) {
    v.webhooks.push(await create(url, '/v1/webhooks', { url: `https://victim${i}.example.com/hook`, event_types: ['session.status_idled'] }))
  }
  return v
}

/** A deployment's required fields, on a schedule (its upcoming runs then show in every read). */
const deploymentOf = (agent: string, env: string) => ({
  agent,
  environment_id: env,
  initial_events: [{ type: 'user.message', content: [{ type: 'text', text: 'hello' }] }],
  schedule: { type: 'cron', expression: '0 9 * * 1-5', timezone: 'Europe/Berlin' },
})
