import type { Tool as ApiTool, ContentBlockParam, MessageParam } from '@anthropic-ai/sdk/resources/messages'
import {
  estimateTokens,
  SKILL_COMPACTION_TOKENS_PER_SKILL,
  SKILL_COMPACTION_TOKENS_SHARED,
  SKILL_DESCRIPTION_BUDGET_SHARE,
} from '../../../protocol/skill-rules.js'
import { SKILL_TOOL, type SkillActivation } from '../history/index.js'
import type { SessionSkill } from '../history/index.js'

export { SKILL_TOOL, type SkillActivation }

/** Where a session's skills are inside its sandbox: each at `<root>/<name>/`. */
export const SKILLS_ROOT = '/workspace/skills'

/**
 * The `Skill` tool as the model sees it (SPEC session create rule 10): every skill by name, each with its description
 * while the descriptions so far fit in 1% of the context window (estimated tokens); the rest by name only, still
 * invocable.
 */
export function skillTool(skills: readonly SessionSkill[], contextWindow: number): ApiTool {
  let budget = Math.floor(contextWindow * SKILL_DESCRIPTION_BUDGET_SHARE)
  const lines = skills.map((s) => {
    const cost = estimateTokens(s.description)
    if (cost > budget) {
      budget = 0
      return `- ${s.name}`
    }
    budget -= cost
    return `- ${s.name}: ${s.description}`
  })
  return {
    name: SKILL_TOOL,
    description: [
      'Launches a skill: instructions and files for a kind of task. When a task matches a skill below, call this tool with',
      "the skill's name before doing the task; its SKILL.md instructions are then added to the conversation, with the",
      'directory its other files are in (read-only): open them with the read or bash tools when the instructions point',
      'to them. Launch a skill once; its instructions stay in the conversation.',
      '',
      '<available_skills>',
      ...lines,
      '</available_skills>',
    ].join('\n'),
    input_schema: {
      type: 'object',
      properties: { skill: { type: 'string', description: 'The name of the skill, exactly as listed' } },
      required: ['skill'],
    },
  }
}

/** Where skill `s` is inside the sandbox: /workspace/skills/<name>, or a roster member's beneath `.agents/`. */
export const skillDir = (s: Pick<SessionSkill, 'name' | 'dir'>): string => `${SKILLS_ROOT}/${s.dir ?? s.name}`

/** The block injected after a launch: the skill's base directory, then its whole SKILL.md. */
export const injectedText = (dir: string, skillMd: string) => `Base directory for this skill: ${dir}\n\n${skillMd}`

/** What a SKILL.md that could not be read leaves in its place: the model can still read the file itself. */
const unreadable = (name: string, dir: string) => `The instructions of skill ${name} could not be loaded for this request; read ${dir}/SKILL.md instead.`

export interface SkillContextOptions {
  /** The configured context window, in tokens. */
  contextWindow: number
  /** Each skill's directory inside the sandbox, by name (default /workspace/skills/<name>). */
  dirs?: ReadonlyMap<string, string>
  /** Estimated tokens of the request besides the injected blocks (messages, system prompt, tools). */
  baseTokens: number
}

/**
 * The conversation as a model request sends it: after the result of each launch, the launched skill's SKILL.md
 * (`texts` by name; a missing one leaves a note), appended to that user message, after every tool_result (the API wants
 * results first). A later launch of a skill already injected adds nothing, so the first launch carries it.
 *
 * Request-time compaction (SPEC limits, "Skill compaction budget"): when the request would exceed the context window,
 * each skill's block moves to its latest launch and keeps at most 5,000 estimated tokens, the latest launched skills
 * first, 25,000 across all; what does not fit is cut (the cut says where the whole file is). Nothing else of the
 * conversation is compacted here. `h.messages` is never changed: the messages that gain a block are copies.
 */
export function withSkills(
  messages: readonly MessageParam[],
  activations: readonly SkillActivation[],
  texts: ReadonlyMap<string, string | undefined>,
  o: SkillContextOptions,
): MessageParam[] {
  if (!activations.length) return messages as MessageParam[]
  const dirOf = (name: string) => o.dirs?.get(name) ?? `${SKILLS_ROOT}/${name}`
  const blocks = (name: string) => {
    const md = texts.get(name)
    return md === undefined ? unreadable(name, dirOf(name)) : injectedText(dirOf(name), md)
  }
  const full = new Map<number, string[]>()
  const first = new Set<string>()
  let tokens = o.baseTokens
  for (const a of activations) {
    if (first.has(a.name)) continue
    first.add(a.name)
    const text = blocks(a.name)
    tokens += estimateTokens(text)
    full.set(a.message, [...(full.get(a.message) ?? []), text])
  }
  return inject(messages, tokens <= o.contextWindow ? full : compacted(activations, blocks, dirOf))
}

/** Each skill's block at its latest launch, cut to the per-skill and shared budgets, latest launches first. */
function compacted(activations: readonly SkillActivation[], blocks: (name: string) => string, dirOf: (name: string) => string): Map<number, string[]> {
  const at = new Map<number, string[]>()
  const done = new Set<string>()
  let shared = SKILL_COMPACTION_TOKENS_SHARED
  for (let i = activations.length - 1; i >= 0; i--) {
    const a = activations[i]!
    if (done.has(a.name)) continue
    done.add(a.name)
    const allowed = Math.min(SKILL_COMPACTION_TOKENS_PER_SKILL, shared)
    const text = cut(blocks(a.name), allowed, dirOf(a.name))
    shared -= estimateTokens(text)
    at.set(a.message, [text, ...(at.get(a.message) ?? [])])
  }
  return at
}

/** `text` within `tokens` estimated tokens: whole, or its start and a line saying where the rest is. */
function cut(text: string, tokens: number, dir: string): string {
  if (estimateTokens(text) <= tokens) return text
  const note = `\n\n[Cut to fit the conversation: the whole file is ${dir}/SKILL.md]`
  const keep = Math.max(0, tokens * 4 - note.length)
  return keep > 0 ? text.slice(0, keep) + note : note.trimStart()
}

function inject(messages: readonly MessageParam[], at: ReadonlyMap<number, string[]>): MessageParam[] {
  const out = messages.slice()
  for (const [i, texts] of at) {
    const m = out[i]
    if (m?.role !== 'user') continue
    const content: ContentBlockParam[] = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : [...m.content]
    for (const text of texts) content.push({ type: 'text', text })
    out[i] = { role: 'user', content }
  }
  return out
}
