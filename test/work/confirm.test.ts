import { existsSync, mkdtempSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { agentAndEnv, collect, isIdle, sessionStack } from '../sessions/_helpers.js'

/**
 * always_ask in a self-hosted session (issue 29 §6): the tool use carries `evaluated_permission: ask`, a `deny` is
 * answered by the service itself (the worker runs nothing), an `allow` lets the client's worker run it; an interrupt
 * stops the session's live item, an archive force-stops it.
 */

const s = await sessionStack()
const ASK = [{ type: 'agent_toolset_20260401', default_config: { permission_policy: { type: 'always_ask' } } }]
const say = (text: string) => ({ type: 'user.message', content: [{ type: 'text', text }] })
const work = s.client.beta.environments.work

async function askSession() {
  const { agent, env } = await agentAndEnv(s.client, { tools: ASK }, { config: { type: 'self_hosted' } })
  const session = await s.client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
  return { env, session }
}

async function step(id: string, events: any[], until: (e: any) => boolean = isIdle) {
  const stream = await s.client.beta.sessions.events.stream(id)
  await s.client.beta.sessions.events.send(id, { events } as any)
  return collect(stream, until, 20_000)
}

t.test('deny is resolved by the service; allow lets the worker run the tool', async (t) => {
  const { env, session } = await askSession()
  s.model.enqueue({ steps: [{ type: 'tool_use', name: 'bash', input: { command: 'touch denied.txt' } }] }, { steps: [{ type: 'text', text: 'ok, not then' }] })
  const parked = await step(session.id, [say('try')])
  const use = parked.find((e) => e.type === 'agent.tool_use')
  t.match(use, { name: 'bash', evaluated_permission: 'ask', evaluation: { type: 'always_ask' } })
  t.same(parked.at(-1).stop_reason, { type: 'requires_action', event_ids: [use.id] })

  const denied = await step(
    session.id,
    [{ type: 'user.tool_confirmation', tool_use_id: use.id, result: 'deny', deny_message: 'no' }],
    (e) => isIdle(e) && e.stop_reason.type === 'end_turn',
  )
  const result = denied.find((e) => e.type === 'agent.tool_result')
  t.match(result, { tool_use_id: use.id, is_error: true })
  t.match(JSON.stringify(result.content), /no/)

  // Allowed: the client's worker runs it (SessionToolRunner waits for the allow).
  const workdir = mkdtempSync(path.join(os.tmpdir(), 'troupe-ask-'))
  const ac = new AbortController()
  const running = work
    .worker({ environmentId: env.id, environmentKey: 'k', workdir, maxIdleMs: 60_000, signal: ac.signal } as any)
    .run()
    .catch(() => undefined)
  s.model.enqueue({ steps: [{ type: 'tool_use', name: 'bash', input: { command: 'touch allowed.txt' } }] }, { steps: [{ type: 'text', text: 'made it' }] })
  const asked = await step(session.id, [say('again')], (e) => isIdle(e) && e.stop_reason.type === 'requires_action')
  const use2 = asked.find((e) => e.type === 'agent.tool_use')
  t.notOk(existsSync(path.join(workdir, 'allowed.txt')), 'not run before the allow')
  const done = await step(
    session.id,
    [{ type: 'user.tool_confirmation', tool_use_id: use2.id, result: 'allow' }],
    (e) => isIdle(e) && e.stop_reason.type === 'end_turn',
  )
  t.ok(
    done.some((e) => e.type === 'user.tool_result' && e.tool_use_id === use2.id),
    'the worker answered it',
  )
  t.ok(existsSync(path.join(workdir, 'allowed.txt')), 'run by the worker')

  // An interrupt stops the live item (the worker sees stopping and leaves); an archive force-stops what is left.
  await s.client.beta.sessions.events.send(session.id, { events: [{ type: 'user.interrupt' }] } as any)
  const items = () => work.list(env.id).then((p) => p.data)
  const live = (await items()).find((i) => i.state !== 'stopped')
  t.ok(!live || live.state === 'stopping', `the live item stops (${live?.state ?? 'none left'})`)
  await s.client.beta.sessions.archive(session.id)
  t.ok(
    (await items()).every((i) => i.state === 'stopped'),
    'archived: every item stopped',
  )
  ac.abort()
  await running
})
