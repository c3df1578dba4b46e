import type { MessageParam } from '@anthropic-ai/sdk/resources/messages'
import t from 'tap'
import { injectedText, skillTool, withSkills } from '../../actors/session/turn/skill-context.js'
import type { SessionSkill } from '../../actors/session/history/state.js'
import { estimateTokens } from '../../protocol/skill-rules.js'

/**
 * Skill discovery and injection (SPEC session create rule 10, limits "Skill description budget" and "Skill compaction
 * budget"), as pure functions of the conversation: what the `Skill` tool lists, where a launch's SKILL.md goes, once,
 * and what compaction keeps.
 */

const skill = (name: string, description: string): SessionSkill => ({
  skill_id: `skill_${name}`,
  version: '1',
  name,
  description,
  object: `skill_${name}.X`,
  expanded_bytes: 10,
})

t.test('the Skill tool lists every skill; descriptions while they fit in 1% of the window', async (t) => {
  const skills = [skill('a', 'x'.repeat(400)), skill('b', 'y'.repeat(400)), skill('c', 'z')]
  // 1% of 20,000 = 200 tokens: a's 100 fit, b's 100 fit exactly, c's 1 does not.
  const tool = skillTool(skills, 20_000)
  t.equal(tool.name, 'Skill')
  t.match(tool.description, `- a: ${'x'.repeat(400)}\n- b: ${'y'.repeat(400)}\n- c\n</available_skills>`)
  const small = skillTool(skills, 10_000)
  t.match(small.description, `- a: ${'x'.repeat(400)}\n- b\n- c\n`, 'once one does not fit, the rest are name-only')
  t.same(tool.input_schema.required, ['skill'])
})

const conversation = (): MessageParam[] => [
  { role: 'user', content: [{ type: 'text', text: 'go' }] },
  { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'Skill', input: { skill: 'a' } }] },
  { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: [{ type: 'text', text: 'Launching skill: a' }] }] },
  { role: 'assistant', content: [{ type: 'tool_use', id: 't2', name: 'Skill', input: { skill: 'b' } }] },
  { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't2', content: [{ type: 'text', text: 'Launching skill: b' }] }] },
  { role: 'assistant', content: [{ type: 'tool_use', id: 't3', name: 'Skill', input: { skill: 'a' } }] },
  { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't3', content: [{ type: 'text', text: 'Launching skill: a' }] }] },
]
const launches = [
  { name: 'a', message: 2 },
  { name: 'b', message: 4 },
  { name: 'a', message: 6 },
]
const textsAt = (messages: MessageParam[], i: number) => (messages[i]!.content as any[]).filter((c) => c.type === 'text').map((c) => c.text as string)

t.test('each skill is injected once, at its first launch, after the results; the conversation is not changed', async (t) => {
  const messages = conversation()
  const before = JSON.stringify(messages)
  const texts = new Map([
    ['a', 'A body'],
    ['b', 'B body'],
  ])
  const out = withSkills(messages, launches, texts, { contextWindow: 100_000, baseTokens: 100 })
  t.same(textsAt(out, 2), [injectedText('/workspace/skills/a', 'A body')])
  t.same(
    (out[2]!.content as any[]).map((c) => c.type),
    ['tool_result', 'text'],
  )
  t.same(textsAt(out, 4), [injectedText('/workspace/skills/b', 'B body')])
  t.same(textsAt(out, 6), [], 'an identical later launch adds nothing')
  t.equal(JSON.stringify(messages), before, 'the history is left as it was')
  t.equal(out[0], messages[0], 'messages without a launch are shared, not copied')
  t.equal(withSkills(messages, [], texts, { contextWindow: 1, baseTokens: 1 }), messages, 'no launches, no copy')

  const missing = withSkills(messages, launches, new Map([['a', undefined]]), { contextWindow: 100_000, baseTokens: 0 })
  t.match(textsAt(missing, 2)[0], /could not be loaded .* read \/workspace\/skills\/a\/SKILL\.md/)
})

t.test('past the window: the latest launch of each skill keeps up to 5,000 tokens, 25,000 shared', async (t) => {
  const big = 'q'.repeat(30_000)
  const texts = new Map([
    ['a', big],
    ['b', 'B body'],
  ])
  const out = withSkills(conversation(), launches, texts, { contextWindow: 10_000, baseTokens: 9_000 })
  t.same(textsAt(out, 2), [], 'moved from the first launch')
  const a = textsAt(out, 6)
  t.equal(a.length, 1, 'to the latest one')
  t.ok(estimateTokens(a[0]!) <= 5_000, `cut to 5,000 estimated tokens (${estimateTokens(a[0]!)})`)
  t.match(a[0], /^Base directory for this skill: \/workspace\/skills\/a\n\nqqq/)
  t.match(a[0], /\[Cut to fit the conversation: the whole file is \/workspace\/skills\/a\/SKILL\.md\]$/)
  t.same(textsAt(out, 4), [injectedText('/workspace/skills/b', 'B body')], 'a small one whole')

  // Eight skills of 5,000+ tokens each: the five launched last share the 25,000, the rest keep only the note.
  const many = Array.from({ length: 8 }, (_, i) => ({ name: `s${i}`, message: 0 }))
  const msgs: MessageParam[] = [{ role: 'user', content: [{ type: 'text', text: 'x' }] }]
  const all = withSkills(msgs, many, new Map(many.map((m) => [m.name, big])), { contextWindow: 1_000, baseTokens: 0 })
  const blocks = textsAt(all, 0).slice(1)
  t.equal(blocks.length, 8)
  const total = blocks.reduce((n, b) => n + estimateTokens(b), 0)
  t.ok(total <= 25_000 + 8 * 20, `about 25,000 shared (${total})`)
  t.ok(
    blocks.slice(0, 3).every((b) => b.startsWith('[Cut')),
    'the earliest launched are cut to the note',
  )
})
