import { toFile } from '@anthropic-ai/sdk'
import t from 'tap'
import { collect, failure, isIdle, reader, sessionStack } from '../sessions/_helpers.js'

/**
 * Outcomes (issue 28, point 7): `user.define_outcome` gives the agent its goal; when its turn ends a separate grader
 * request (the agent's model, tool-free) judges the work against the rubric. `needs_revision` sends the agent back
 * with the explanation; at `max_iterations` the pass ends `max_iterations_reached`; a grader that cannot answer
 * `failed`; an interrupt while grading `interrupted`. One outcome at a time; File rubrics are read as text first.
 */

const s = await sessionStack()
const { agents, sessions, environments } = s.client.beta
const GRADER = /^You grade the work/
const lastText = (body: any) => {
  const last = body.messages.at(-1)
  return (last.content as any[])
    .filter((c) => c.type === 'text')
    .map((c) => c.text)
    .join('')
}
const outcome = (extra: Record<string, unknown> = {}) => ({
  type: 'user.define_outcome',
  description: 'Write a haiku about the sea',
  rubric: { type: 'text', content: 'Three lines; mentions waves.' },
  ...extra,
})

async function newSession() {
  const agent = await agents.create({ name: 'poet', model: 'claude-sonnet-4-5', system: 'POET' } as any)
  const env = await environments.create({ name: 'e' } as any)
  return sessions.create({ agent: agent.id, environment_id: env.id } as any)
}

async function run(id: string, events: unknown[]) {
  const stream = await sessions.events.stream(id)
  await sessions.events.send(id, { events } as any)
  return collect(stream, isIdle, 30_000)
}

t.test('needs_revision sends the agent back with the explanation; satisfied ends the outcome', async (t) => {
  const session = await newSession()
  const base = s.model.requests.length
  let grades = 0
  s.model.setHandler((req) => {
    if (GRADER.test(req.body.system ?? '')) {
      grades++
      return grades === 1
        ? { steps: [{ type: 'text', text: '{"result": "needs_revision", "explanation": "It never mentions waves."}' }] }
        : { steps: [{ type: 'text', text: 'Verdict: {"result": "satisfied", "explanation": "Three lines, waves."}' }] }
    }
    if (req.body.system === 'POET') return { steps: [{ type: 'text', text: grades === 0 ? 'the sea is blue' : 'waves\nroll\nin' }] }
    return undefined
  })
  t.teardown(() => s.model.setHandler(undefined))
  const events = await run(session.id, [outcome({ max_iterations: 5 })])
  const defined = events.find((e) => e.type === 'user.define_outcome')
  t.match(defined, { outcome_id: /^outc_/, max_iterations: 5, rubric: { type: 'text', content: 'Three lines; mentions waves.' } })
  const spans = events.filter((e) => e.type.startsWith('span.outcome_evaluation'))
  t.same(
    spans.map((e) => [e.type, e.iteration, e.result]),
    [
      ['span.outcome_evaluation_start', 0, undefined],
      ['span.outcome_evaluation_end', 0, 'needs_revision'],
      ['span.outcome_evaluation_start', 1, undefined],
      ['span.outcome_evaluation_end', 1, 'satisfied'],
    ],
  )
  t.equal(spans[1].outcome_evaluation_start_id, spans[0].id)
  t.equal(spans[1].explanation, 'It never mentions waves.')
  t.ok(spans[3].usage.input_tokens > 0, "the grader's usage")
  t.equal(events.at(-1).stop_reason.type, 'end_turn')

  const requests = s.model.requests.slice(base)
  const graders = requests.filter((r) => GRADER.test(r.body.system ?? ''))
  t.equal(graders.length, 2)
  t.equal(graders[0]!.body.model, 'claude-sonnet-4-5', "the agent's model")
  t.notOk(graders[0]!.body.tools, 'tool-free')
  t.match(lastText(graders[0]!.body), /<rubric>\nThree lines; mentions waves\.\n<\/rubric>[\s\S]*the sea is blue/)
  const poet = requests.filter((r) => r.body.system === 'POET')
  t.match(lastText(poet[0]!.body), /Work toward this outcome: Write a haiku about the sea[\s\S]*Three lines/)
  t.match(lastText(poet[1]!.body), /needs revision \(evaluation 1 of at most 5\):\nIt never mentions waves\./)

  const got = await sessions.retrieve(session.id)
  t.match(got.outcome_evaluations, [
    { type: 'outcome_evaluation', outcome_id: defined.outcome_id, description: 'Write a haiku about the sea', iteration: 1, result: 'satisfied' },
  ])
  t.ok((got.outcome_evaluations[0] as any).completed_at)
})

t.test('max_iterations_reached, failed, and one outcome at a time', async (t) => {
  const session = await newSession()
  let mode: 'revise' | 'garbage' = 'revise'
  s.model.setHandler((req) => {
    if (GRADER.test(req.body.system ?? '')) {
      return mode === 'revise'
        ? { steps: [{ type: 'text', text: '{"result":"needs_revision","explanation":"more"}' }] }
        : { steps: [{ type: 'text', text: 'I would rather not say.' }] }
    }
    return req.body.system === 'POET' ? { steps: [{ type: 'text', text: 'attempt' }] } : undefined
  })
  t.teardown(() => s.model.setHandler(undefined))
  const events = await run(session.id, [outcome({ max_iterations: 2 })])
  const ends = events.filter((e) => e.type === 'span.outcome_evaluation_end').map((e) => e.result)
  t.same(ends, ['needs_revision', 'max_iterations_reached'])
  mode = 'garbage'
  const second = await run(session.id, [outcome()])
  t.same(
    second.filter((e) => e.type === 'span.outcome_evaluation_end').map((e) => e.result),
    ['failed'],
  )
  const evaluations = (await sessions.retrieve(session.id)).outcome_evaluations as any[]
  t.same(
    evaluations.map((x) => x.result),
    ['max_iterations_reached', 'failed'],
    'one entry per outcome',
  )

  const twice = await failure(sessions.events.send(session.id, { events: [outcome(), outcome()] } as any))
  t.equal(twice.status, 409)
  t.match(twice.error.error.message, /^events\[1\]: outcome defined at events\[0\] is still being worked on/)
})

t.test('an interrupt while grading ends the pass interrupted', async (t) => {
  const session = await newSession()
  s.model.setHandler((req) => {
    if (GRADER.test(req.body.system ?? '')) return { hang: true }
    return req.body.system === 'POET' ? { steps: [{ type: 'text', text: 'done' }] } : undefined
  })
  t.teardown(() => s.model.setHandler(undefined))
  const stream = await sessions.events.stream(session.id)
  const r = reader(stream)
  await sessions.events.send(session.id, { events: [outcome()] } as any)
  await r.next((e) => e.type === 'span.outcome_evaluation_start', 20_000)
  const open = await failure(sessions.events.send(session.id, { events: [outcome()] } as any))
  t.equal(open.status, 409, 'a second outcome while one is graded')
  await sessions.events.send(session.id, { events: [{ type: 'user.interrupt' }] } as any)
  const rest = await r.next(isIdle, 20_000)
  const end = rest.find((e) => e.type === 'span.outcome_evaluation_end')
  t.equal(end.result, 'interrupted')
  t.equal(((await sessions.retrieve(session.id)).outcome_evaluations as any[])[0].result, 'interrupted')
})

t.test('a File rubric is read as text before the session exists; a missing one leaves none', async (t) => {
  const file = await s.client.beta.files.upload({ file: await toFile(Buffer.from('Must rhyme.'), 'rubric.txt') } as any)
  const agent = await agents.create({ name: 'poet', model: 'claude-sonnet-4-5', system: 'POET' } as any)
  const env = await environments.create({ name: 'e' } as any)
  s.model.setHandler((req) => {
    if (GRADER.test(req.body.system ?? '')) return { steps: [{ type: 'text', text: '{"result":"satisfied","explanation":"rhymes"}' }] }
    return req.body.system === 'POET' ? { steps: [{ type: 'text', text: 'june moon' }] } : undefined
  })
  t.teardown(() => s.model.setHandler(undefined))
  const missing = await failure(
    sessions.create({
      agent: agent.id,
      environment_id: env.id,
      initial_events: [outcome({ rubric: { type: 'file', file_id: 'file_01JAAAAAAAAAAAAAAAAAAAAAAA' } })],
    } as any),
  )
  t.equal(missing.status, 404)
  t.match(missing.error.error.message, /^initial_events\[0\]\.rubric\.file_id: File file_01JAAAAAAAAAAAAAAAAAAAAAAA not found/)
  const session = await sessions.create({
    agent: agent.id,
    environment_id: env.id,
    initial_events: [outcome({ rubric: { type: 'file', file_id: file.id } })],
  } as any)
  const stored: any[] = []
  for await (const e of sessions.events.list(session.id)) stored.push(e)
  t.same(stored.find((e) => e.type === 'user.define_outcome').rubric, { type: 'text', content: 'Must rhyme.' }, 'snapshotted as text')
})
