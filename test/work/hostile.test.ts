import t from 'tap'
import { agentAndEnv, sessionStack } from '../sessions/_helpers.js'

/**
 * Hostile credentials and worker ids on the work queue's routes and a session's (issue 29, "hostile input"): forged,
 * truncated, oversized and malformed sessions tokens, odd worker ids, odd heartbeat values and TTLs: always a 4xx or
 * an answer, never a 5xx.
 */

const s = await sessionStack()

t.test('hostile tokens, worker ids, heartbeat values and TTLs: 4xx, never 5xx', async (t) => {
  const { agent, env } = await agentAndEnv(s.client, { tools: [{ type: 'agent_toolset_20260401' }] }, { config: { type: 'self_hosted' } })
  const session = await s.client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
  const item = (await s.client.beta.environments.work.poll(env.id))!
  const token = JSON.parse(Buffer.from(item.secret!, 'base64url').toString()).sessions_token as string
  const [, body, sig] = token.split('.')
  const tokens = [
    token.slice(0, -1),
    token.slice(0, 10),
    'trst1.',
    'trst1..',
    `trst1.${body}.`,
    `trst1..${sig}`,
    `trst1.${body}.${sig}.${sig}`,
    `trst1.${Buffer.from('null').toString('base64url')}.${sig}`,
    `trst1.${Buffer.from('{"e":1}').toString('base64url')}.${sig}`,
    `trst1.${'A'.repeat(5000)}.${sig}`,
    `trst1.%%%.${sig}`,
    `trst1.${body}.${'A'.repeat(43)}`,
  ]
  const W = `/v1/environments/${env.id}/work`
  const paths: Array<[string, string]> = [
    ['GET', `${W}/poll?block_ms=1`],
    ['GET', `${W}/stats`],
    ['GET', W],
    ['GET', `${W}/${item.id}`],
    ['POST', `${W}/${item.id}/ack`],
    ['POST', `${W}/${item.id}/heartbeat?expected_last_heartbeat=NO_HEARTBEAT`],
    ['POST', `${W}/${item.id}/stop`],
    ['GET', `/v1/sessions/${session.id}`],
    ['GET', `/v1/sessions/${session.id}/events`],
    ['GET', '/v1/agents'],
  ]
  const statuses = new Map<number, number>()
  const send = async (method: string, path: string, headers: Record<string, string>) => {
    const r = await fetch(`${s.url}${path}`, { method, headers })
    await r.arrayBuffer()
    statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1)
    if (r.status >= 500) t.fail(`${method} ${path} ${JSON.stringify(headers).slice(0, 120)}: ${r.status}`)
    return r.status
  }
  for (const tok of tokens) for (const [m, p] of paths) t.equal(await send(m, p, { authorization: `Bearer ${tok}` }), 401, `${m} ${p}`)
  const workers = ['', ' ', 'x'.repeat(10_000), 'ü-worker', '*', '>', 'a.b.c', '\u0000'.replace('\u0000', '%00')]
  for (const w of workers) await send('GET', `${W}/poll?block_ms=1`, { 'anthropic-worker-id': w })
  const values = ['', 'NO_HEARTBEAT ', 'x'.repeat(65), '2026-01-01T00:00:00.000Z', '%00', '../../x', '*']
  for (const v of values) await send('POST', `${W}/${item.id}/heartbeat?expected_last_heartbeat=${encodeURIComponent(v)}`, {})
  for (const ttl of ['-1', '0', '1e9', '99999999999999999999', 'NaN', '1.5', '', 'x']) {
    await send('POST', `${W}/${item.id}/heartbeat?desired_ttl_seconds=${ttl}&expected_last_heartbeat=NO_HEARTBEAT`, {})
  }
  for (const bm of ['0', '1000', '-1', '1.5', 'x', '1e3', '']) await send('GET', `${W}/poll?block_ms=${bm}`, {})
  t.comment(`statuses: ${JSON.stringify(Object.fromEntries(statuses))}`)
  t.notOk(
    [...statuses.keys()].some((st) => st >= 500),
    'no 5xx',
  )
})
