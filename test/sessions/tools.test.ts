import { existsSync, mkdtempSync, readFileSync } from 'node:fs'
import { execFileSync } from 'node:child_process'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { failure } from '../agents/_util.js'
import { sessionWorkdir } from '../helpers/sandbox-backend.js'
import { agentAndEnv, collect, isIdle, sessionStack } from './_helpers.js'

/**
 * Tools in sessions (issue point 5): built-in tools run by the service in cloud environments, custom tools and
 * self-hosted environments parked with requires_action, always_ask confirmations, interrupting a running tool.
 */

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'troupe-tools-'))
const s = await sessionStack({ TROUPE_DATA_DIR: dataDir })

const workspace = (id: string) => sessionWorkdir(dataDir, id).host

const TOOLSET = [{ type: 'agent_toolset_20260401' }]
const LOOKUP = { type: 'custom', name: 'lookup', description: 'Looks a key up in the client-side store.', input_schema: { type: 'object' } }

async function newSession(agent: Record<string, unknown>, env: Record<string, unknown> = {}) {
  const { agent: a, env: e } = await agentAndEnv(s.client, agent, env)
  return s.client.beta.sessions.create({ agent: a.id, environment_id: e.id } as any)
}

/** Opens the live stream, sends `events`, and collects until the session goes idle. */
async function step(id: string, events: any[], until: (e: any, all: any[]) => boolean = isIdle) {
  const stream = await s.client.beta.sessions.events.stream(id)
  await s.client.beta.sessions.events.send(id, { events } as any)
  return collect(stream, until)
}

const say = (text: string) => ({ type: 'user.message', content: [{ type: 'text', text }] })
const of = (events: any[], type: string) => events.filter((e) => e.type === type)
const textOf = (ev: any) => (ev.content as any[]).map((c) => c.text).join('')
const lastUser = (req: { body: any }) => {
  const msgs = req.body.messages as any[]
  const last = msgs[msgs.length - 1]
  if (last.role !== 'user') throw new Error(`the last message is ${last.role}, not user`)
  return last.content as any[]
}

t.test('built-in tools run in a cloud session and their results go to the next model request', async (t) => {
  const session = await newSession({ tools: TOOLSET })
  const base = s.model.requests.length
  s.model.enqueue(
    { steps: [{ type: 'tool_use', name: 'bash', input: { command: 'echo hi > f.txt && pwd' } }] },
    { steps: [{ type: 'tool_use', name: 'read', input: { file_path: 'f.txt' } }] },
    { steps: [{ type: 'text', text: 'done' }] },
  )
  const events = await step(session.id, [say('make a file')])
  t.same(
    events.map((e) => e.type),
    [
      'user.message',
      'session.status_running',
      'span.model_request_start',
      'agent.tool_use',
      'span.model_request_end',
      'agent.tool_result',
      'span.model_request_start',
      'agent.tool_use',
      'span.model_request_end',
      'agent.tool_result',
      'span.model_request_start',
      'agent.message',
      'span.model_request_end',
      'session.status_idle',
    ],
  )
  const [bash, read] = of(events, 'agent.tool_use')
  const [bashOut, readOut] = of(events, 'agent.tool_result')
  t.match(bash, { name: 'bash', input: { command: 'echo hi > f.txt && pwd' }, evaluated_permission: 'allow' })
  t.match(read, { name: 'read', input: { file_path: 'f.txt' }, evaluated_permission: 'allow' })
  t.equal(bashOut.tool_use_id, bash.id)
  t.notOk(bashOut.is_error)
  t.equal(readOut.tool_use_id, read.id)
  t.notOk(readOut.is_error)
  t.match(textOf(readOut), /^\s*1\thi$/m, 'read returns the numbered line')
  t.same(events.at(-1).stop_reason, { type: 'end_turn' })

  t.equal(s.model.requests.length, base + 3)
  // The request after each tool call carries the tool_use and its result.
  const second = s.model.requests[base + 1]!.body
  const assistant = second.messages.at(-2)
  t.match(assistant, { role: 'assistant', content: [{ type: 'tool_use', id: bash.id, name: 'bash' }] })
  t.same(lastUser(s.model.requests[base + 1]!), [{ type: 'tool_result', tool_use_id: bash.id, content: bashOut.content }])
  t.same(lastUser(s.model.requests[base + 2]!), [{ type: 'tool_result', tool_use_id: read.id, content: readOut.content }])
  t.ok(
    second.tools.some((d: any) => d.name === 'bash'),
    'built-in tools are offered to the model',
  )
})

t.test('the working directory of a session is TROUPE_DATA_DIR/sessions/<id> (isolated: its workspace/, seen as /workspace)', async (t) => {
  const session = await newSession({ tools: TOOLSET })
  s.model.enqueue({ steps: [{ type: 'tool_use', name: 'bash', input: { command: 'echo there > g.txt && pwd' } }] }, {})
  const events = await step(session.id, [say('where are you')])
  const workdir = sessionWorkdir(dataDir, session.id)
  const out = of(events, 'agent.tool_result')[0]
  t.equal(textOf(out).trim(), workdir.inside)
  t.equal(readFileSync(path.join(workdir.host, 'g.txt'), 'utf8'), 'there\n')
})

t.test('the shell persists across tool calls and across turns', async (t) => {
  const session = await newSession({ tools: TOOLSET })
  s.model.enqueue(
    { steps: [{ type: 'tool_use', name: 'bash', input: { command: 'export X=1 && mkdir -p sub && cd sub' } }] },
    { steps: [{ type: 'tool_use', name: 'bash', input: { command: 'echo "X=$X in $(basename $PWD)"' } }] },
    { steps: [{ type: 'text', text: 'set' }] },
  )
  const first = await step(session.id, [say('set X')])
  t.same(textOf(of(first, 'agent.tool_result')[1]).trim(), 'X=1 in sub', 'same turn, next call')

  s.model.enqueue(
    { steps: [{ type: 'tool_use', name: 'bash', input: { command: 'echo "X=$X in $(basename $PWD)"' } }] },
    { steps: [{ type: 'text', text: 'read' }] },
  )
  const second = await step(session.id, [say('read X')])
  t.same(textOf(of(second, 'agent.tool_result')[0]).trim(), 'X=1 in sub', 'next turn')
})

t.test('write, edit with replace_all, read with view_range, glob and grep', async (t) => {
  const session = await newSession({ tools: TOOLSET })
  const base = s.model.requests.length
  s.model.enqueue(
    {
      steps: [
        { type: 'tool_use', name: 'write', input: { file_path: 'a.txt', content: 'foo\nbar\nfoo\nbaz\n' } },
        { type: 'tool_use', name: 'write', input: { file_path: 'docs/b.md', content: '# title\nqux here\n' } },
      ],
    },
    {
      steps: [
        { type: 'tool_use', name: 'edit', input: { file_path: 'a.txt', old_string: 'foo', new_string: 'qux' } },
        { type: 'tool_use', name: 'edit', input: { file_path: 'a.txt', old_string: 'foo', new_string: 'qux', replace_all: true } },
        { type: 'tool_use', name: 'read', input: { file_path: 'a.txt', view_range: [2, 3] } },
        { type: 'tool_use', name: 'glob', input: { pattern: '**/*.md' } },
        { type: 'tool_use', name: 'grep', input: { pattern: 'qux' } },
      ],
    },
    { steps: [{ type: 'text', text: 'edited' }] },
  )
  const events = await step(session.id, [say('edit files')])
  const results = of(events, 'agent.tool_result')
  t.equal(results.length, 7)
  const [w1, w2, ambiguous, replaced, read, glob, grep] = results
  t.notOk(w1.is_error)
  t.notOk(w2.is_error)
  t.equal(ambiguous.is_error, true, 'an ambiguous edit without replace_all is refused')
  t.notOk(replaced.is_error)
  t.equal(readFileSync(path.join(workspace(session.id), 'a.txt'), 'utf8'), 'qux\nbar\nqux\nbaz\n')
  t.notOk(read.is_error)
  t.equal(textOf(read), '     2\tbar\n     3\tqux', 'only lines 2-3')
  t.equal(textOf(glob).trim(), 'docs/b.md')
  const hits = textOf(grep).trim().split('\n').sort()
  t.same(hits, ['a.txt:1:qux', 'a.txt:3:qux', 'docs/b.md:2:qux here'])

  // All results of one response go back together, in order, in one user message.
  const uses = of(events, 'agent.tool_use')
  const blocks = lastUser(s.model.requests[base + 2]!)
  t.same(
    blocks.map((b) => b.tool_use_id),
    uses.slice(2).map((u) => u.id),
  )
  t.same(
    blocks.map((b) => b.type),
    Array(5).fill('tool_result'),
  )
  t.equal(blocks[0].is_error, true)
})

t.test('bash output over the 30000-character cap is cut and says so', async (t) => {
  const session = await newSession({ tools: TOOLSET })
  s.model.enqueue({ steps: [{ type: 'tool_use', name: 'bash', input: { command: 'yes | head -c 100000' } }] }, {})
  const events = await step(session.id, [say('flood')])
  const text = textOf(of(events, 'agent.tool_result')[0])
  const note = /\[output truncated: showed (\d+) of (\d+) characters\]$/.exec(text)
  t.ok(note, 'the result ends with a note saying it was cut')
  t.equal(Number(note?.[1]), 30_000, 'shows the first 30000 characters')
  t.ok(Number(note?.[2]) >= 99_999, `counts the whole output (${note?.[2]})`)
  t.ok(text.length < 30_100, `the result is capped (${text.length} characters)`)
})

t.test('a built-in tool the agent disabled is not offered and not run', async (t) => {
  const session = await newSession({ tools: [{ type: 'agent_toolset_20260401', configs: [{ name: 'bash', enabled: false }] }] })
  const base = s.model.requests.length
  s.model.enqueue({ steps: [{ type: 'tool_use', name: 'bash', input: { command: 'touch disabled.txt' } }] }, {})
  const events = await step(session.id, [say('try bash')])
  const offered = s.model.requests[base]!.body.tools.map((d: any) => d.name)
  t.notOk(offered.includes('bash'), 'bash is not offered')
  t.ok(offered.includes('read'), 'the other built-ins are')
  const result = of(events, 'agent.tool_result')[0]
  t.equal(result.is_error, true)
  t.match(textOf(result), /not available/)
  t.notOk(existsSync(path.join(workspace(session.id), 'disabled.txt')))
  t.same(events.at(-1).stop_reason, { type: 'end_turn' })
})

t.test('a custom tool use parks the session with requires_action and is not run by the service', async (t) => {
  const session = await newSession({ tools: [LOOKUP] })
  const base = s.model.requests.length
  s.model.enqueue({ steps: [{ type: 'tool_use', name: 'lookup', input: { key: 'answer' } }] })
  const events = await step(session.id, [say('look it up')])
  t.same(
    events.map((e) => e.type),
    ['user.message', 'session.status_running', 'span.model_request_start', 'agent.custom_tool_use', 'span.model_request_end', 'session.status_idle'],
  )
  const use = of(events, 'agent.custom_tool_use')[0]
  t.match(use, { name: 'lookup', input: { key: 'answer' } })
  t.same(events.at(-1).stop_reason, { type: 'requires_action', event_ids: [use.id] })
  t.equal(s.model.requests.length, base + 1, 'no further model request while waiting')
  t.ok(s.model.requests[base]!.body.tools.some((d: any) => d.name === 'lookup' && d.description === LOOKUP.description))
  const got = await s.client.beta.sessions.retrieve(session.id)
  t.equal(got.status, 'idle')

  s.model.enqueue({ steps: [{ type: 'text', text: 'the answer is 42' }] })
  const resumed = await step(session.id, [{ type: 'user.custom_tool_result', custom_tool_use_id: use.id, content: [{ type: 'text', text: '42' }] }])
  t.same(
    resumed.map((e) => e.type),
    ['user.custom_tool_result', 'session.status_running', 'span.model_request_start', 'agent.message', 'span.model_request_end', 'session.status_idle'],
  )
  t.same(resumed.at(-1).stop_reason, { type: 'end_turn' })
  t.equal(s.model.requests.length, base + 2)
  const req = s.model.requests[base + 1]!
  t.same(
    req.body.messages.map((m: any) => m.role),
    ['user', 'assistant', 'user'],
    'the same turn continues',
  )
  t.same(lastUser(req), [{ type: 'tool_result', tool_use_id: use.id, content: [{ type: 'text', text: '42' }] }])
})

t.test('resolving one of two custom tool uses re-emits requires_action with the remaining id', async (t) => {
  const session = await newSession({ tools: [LOOKUP] })
  const base = s.model.requests.length
  s.model.enqueue({
    steps: [
      { type: 'tool_use', name: 'lookup', input: { key: 'a' } },
      { type: 'tool_use', name: 'lookup', input: { key: 'b' } },
    ],
  })
  const events = await step(session.id, [say('two lookups')])
  const [a, b] = of(events, 'agent.custom_tool_use')
  t.same(events.at(-1).stop_reason, { type: 'requires_action', event_ids: [a.id, b.id] })

  const partial = await step(session.id, [{ type: 'user.custom_tool_result', custom_tool_use_id: b.id, content: [{ type: 'text', text: 'B' }] }])
  t.same(partial.at(-1).stop_reason, { type: 'requires_action', event_ids: [a.id] })
  t.equal(of(partial, 'span.model_request_start').length, 0, 'no model request with a tool use still open')
  t.equal(s.model.requests.length, base + 1)

  s.model.enqueue({ steps: [{ type: 'text', text: 'both' }] })
  const done = await step(session.id, [{ type: 'user.custom_tool_result', custom_tool_use_id: a.id, content: [{ type: 'text', text: 'A' }], is_error: true }])
  t.same(done.at(-1).stop_reason, { type: 'end_turn' })
  t.equal(s.model.requests.length, base + 2)
  const blocks = lastUser(s.model.requests[base + 1]!)
  t.same(
    blocks.map((x) => [x.tool_use_id, x.content[0].text, !!x.is_error]).sort(),
    [
      [a.id, 'A', true],
      [b.id, 'B', false],
    ].sort(),
  )
})

t.test('a custom tool result for an unknown or already answered id is refused naming custom_tool_use_id', async (t) => {
  const session = await newSession({ tools: [LOOKUP] })
  s.model.enqueue({ steps: [{ type: 'tool_use', name: 'lookup', input: {} }] })
  const events = await step(session.id, [say('look')])
  const use = of(events, 'agent.custom_tool_use')[0]

  const unknown = await failure(
    s.client.beta.sessions.events.send(session.id, {
      events: [{ type: 'user.custom_tool_result', custom_tool_use_id: 'sevt_01NOPE', content: [] }],
    } as any),
  )
  t.equal(unknown.status, 400)
  t.equal(unknown.error.error.type, 'invalid_request_error')
  t.match(unknown.error.error.message, /events\[0\]\.custom_tool_use_id/)

  const twice = await failure(
    s.client.beta.sessions.events.send(session.id, {
      events: [
        { type: 'user.custom_tool_result', custom_tool_use_id: use.id, content: [] },
        { type: 'user.custom_tool_result', custom_tool_use_id: use.id, content: [] },
      ],
    } as any),
  )
  t.equal(twice.status, 400, 'twice in one request')
  t.match(twice.error.error.message, /events\[1\]\.custom_tool_use_id/)

  s.model.enqueue({})
  await step(session.id, [{ type: 'user.custom_tool_result', custom_tool_use_id: use.id, content: [{ type: 'text', text: 'x' }] }])
  const again = await failure(
    s.client.beta.sessions.events.send(session.id, {
      events: [{ type: 'user.custom_tool_result', custom_tool_use_id: use.id, content: [] }],
    } as any),
  )
  t.equal(again.status, 400, 'already answered')
  t.match(again.error.error.message, /custom_tool_use_id/)
  t.match(again.error.error.message, use.id)
})

t.test('in a self_hosted environment a built-in tool use parks with requires_action and is not run', async (t) => {
  const session = await newSession({ tools: TOOLSET }, { config: { type: 'self_hosted' } })
  const base = s.model.requests.length
  s.model.enqueue({ steps: [{ type: 'tool_use', name: 'bash', input: { command: 'touch not-here.txt' } }] })
  const events = await step(session.id, [say('touch')])
  const use = of(events, 'agent.tool_use')[0]
  t.match(use, { name: 'bash', input: { command: 'touch not-here.txt' } })
  t.equal(of(events, 'agent.tool_result').length, 0)
  t.same(events.at(-1).stop_reason, { type: 'requires_action', event_ids: [use.id] })
  t.notOk(existsSync(path.join(workspace(session.id), 'not-here.txt')), 'the service did not run it')

  s.model.enqueue({ steps: [{ type: 'text', text: 'touched' }] })
  const resumed = await step(session.id, [{ type: 'user.tool_result', tool_use_id: use.id, content: [{ type: 'text', text: 'ran remotely' }] }])
  t.same(resumed.map((e) => e.type).slice(0, 2), ['user.tool_result', 'session.status_running'])
  t.same(resumed.at(-1).stop_reason, { type: 'end_turn' })
  t.same(lastUser(s.model.requests[base + 1]!), [{ type: 'tool_result', tool_use_id: use.id, content: [{ type: 'text', text: 'ran remotely' }] }])
  t.notOk(existsSync(path.join(workspace(session.id), 'not-here.txt')))
})

t.test('user.tool_result is refused in a cloud session', async (t) => {
  const session = await newSession({ tools: TOOLSET })
  const err = await failure(
    s.client.beta.sessions.events.send(session.id, {
      events: [{ type: 'user.tool_result', tool_use_id: 'sevt_01X', content: [] }],
    } as any),
  )
  t.equal(err.status, 400)
  t.equal(err.error.error.type, 'invalid_request_error')
  t.match(err.error.error.message, /events\[0\].*user\.tool_result.*self_hosted/)
})

const ASK_TOOLSET = [{ type: 'agent_toolset_20260401', default_config: { permission_policy: { type: 'always_ask' } } }]

t.test('always_ask: the tool use waits for confirmation; allow runs it and the turn continues', async (t) => {
  const session = await newSession({ tools: ASK_TOOLSET })
  const base = s.model.requests.length
  const file = path.join(workspace(session.id), 'allowed.txt')
  s.model.enqueue({ steps: [{ type: 'tool_use', name: 'bash', input: { command: 'echo yes > allowed.txt && echo wrote' } }] })
  const events = await step(session.id, [say('write')])
  const use = of(events, 'agent.tool_use')[0]
  t.match(use, { name: 'bash', evaluated_permission: 'ask', evaluation: { type: 'always_ask' } })
  t.equal(of(events, 'agent.tool_result').length, 0)
  t.same(events.at(-1).stop_reason, { type: 'requires_action', event_ids: [use.id] })
  t.notOk(existsSync(file), 'not run before confirmation')

  s.model.enqueue({ steps: [{ type: 'text', text: 'written' }] })
  const resumed = await step(session.id, [{ type: 'user.tool_confirmation', tool_use_id: use.id, result: 'allow' }])
  t.same(
    resumed.map((e) => e.type),
    [
      'user.tool_confirmation',
      'session.status_running',
      'agent.tool_result',
      'span.model_request_start',
      'agent.message',
      'span.model_request_end',
      'session.status_idle',
    ],
  )
  const result = of(resumed, 'agent.tool_result')[0]
  t.equal(result.tool_use_id, use.id)
  t.equal(textOf(result).trim(), 'wrote')
  t.equal(readFileSync(file, 'utf8'), 'yes\n')
  t.same(resumed.at(-1).stop_reason, { type: 'end_turn' })
  t.same(lastUser(s.model.requests[base + 1]!), [{ type: 'tool_result', tool_use_id: use.id, content: result.content }])

  const again = await failure(
    s.client.beta.sessions.events.send(session.id, {
      events: [{ type: 'user.tool_confirmation', tool_use_id: use.id, result: 'allow' }],
    } as any),
  )
  t.equal(again.status, 400, 'a second confirmation is refused')
  t.match(again.error.error.message, /events\[0\]\.tool_use_id/)
})

t.test('always_ask: deny with a deny_message gives an error result and does not run the tool', async (t) => {
  const session = await newSession({ tools: ASK_TOOLSET })
  const base = s.model.requests.length
  const file = path.join(workspace(session.id), 'denied.txt')
  s.model.enqueue({ steps: [{ type: 'tool_use', name: 'bash', input: { command: 'echo no > denied.txt' } }] })
  const events = await step(session.id, [say('write')])
  const use = of(events, 'agent.tool_use')[0]

  s.model.enqueue({ steps: [{ type: 'text', text: 'ok, not writing' }] })
  const resumed = await step(session.id, [{ type: 'user.tool_confirmation', tool_use_id: use.id, result: 'deny', deny_message: 'not in this directory' }])
  const result = of(resumed, 'agent.tool_result')[0]
  t.match(result, { tool_use_id: use.id, is_error: true, content: [{ type: 'text', text: 'not in this directory' }] })
  t.notOk(existsSync(file), 'the denied command did not run')
  t.same(resumed.at(-1).stop_reason, { type: 'end_turn' })
  t.same(lastUser(s.model.requests[base + 1]!), [
    { type: 'tool_result', tool_use_id: use.id, content: [{ type: 'text', text: 'not in this directory' }], is_error: true },
  ])
})

t.test('user.interrupt kills a running bash tool and the next message works', async (t) => {
  const session = await newSession({ tools: TOOLSET })
  const marker = `sleep 29.${process.pid % 1000}`
  s.model.enqueue({ steps: [{ type: 'tool_use', name: 'bash', input: { command: marker } }] })
  // One stream read in two parts: up to the tool use, then up to idle.
  const stream = await s.client.beta.sessions.events.stream(session.id)
  const it = stream[Symbol.asyncIterator]()
  const upTo = async (until: (e: any) => boolean) => {
    const got: any[] = []
    for (;;) {
      const r = await it.next()
      if (r.done) return got
      got.push(r.value)
      if (until(r.value)) return got
    }
  }
  const timer = setTimeout(() => stream.controller.abort(), 20_000)
  t.teardown(() => {
    clearTimeout(timer)
    stream.controller.abort()
  })
  await s.client.beta.sessions.events.send(session.id, { events: [say('sleep')] } as any)
  const before = await upTo((e) => e.type === 'agent.tool_use')
  t.equal(before.at(-1).type, 'agent.tool_use')
  const running = () =>
    execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
      .split('\n')
      .some((l) => l.trim() === marker)
  for (let i = 0; i < 50 && !running(); i++) await new Promise((r) => setTimeout(r, 100))
  t.ok(running(), 'the command is running')

  const started = Date.now()
  await s.client.beta.sessions.events.send(session.id, { events: [{ type: 'user.interrupt' }] } as any)
  const after = await upTo(isIdle)
  const took = Date.now() - started
  t.ok(took < 10_000, `idle ${took} ms after the interrupt`)
  t.equal(after.at(-1)?.type, 'session.status_idle')
  t.equal(of(after, 'span.model_request_start').length, 0, 'no model request after the interrupt')
  for (let i = 0; i < 50 && running(); i++) await new Promise((r) => setTimeout(r, 100))
  t.notOk(running(), 'the command was killed')

  const base = s.model.requests.length
  s.model.enqueue({ steps: [{ type: 'tool_use', name: 'bash', input: { command: 'echo awake' } }] }, { steps: [{ type: 'text', text: 'awake' }] })
  const next = await step(session.id, [say('still there?')])
  t.same(next.at(-1).stop_reason, { type: 'end_turn' })
  t.equal(textOf(of(next, 'agent.tool_result')[0]).trim(), 'awake', 'the shell works after the kill')
  t.same(of(next, 'agent.message')[0].content, [{ type: 'text', text: 'awake' }])
  // The abandoned tool use still gets a result in the conversation, or the Messages API would refuse it.
  const first = s.model.requests[base]!.body.messages as any[]
  const use = before.at(-1)
  t.match(first.at(-2), { role: 'assistant', content: [{ type: 'tool_use', id: use.id }] })
  t.match(first.at(-1), {
    role: 'user',
    content: [
      { type: 'tool_result', tool_use_id: use.id, is_error: true },
      { type: 'text', text: 'still there?' },
    ],
  })
})
