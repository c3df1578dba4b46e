/*
 * Skill launches as a history records them: the `Skill` tool's name (a turn offers it, turn/skill-context.ts) and
 * each successful call, whose SKILL.md a model request then carries after that call's result.
 */

/** The private dispatcher the model invokes skills with (an agent with skills may not define a tool of this name). */
export const SKILL_TOOL = 'Skill'

/** A successful `Skill` call: the skill it launched and the user message holding its result. */
export interface SkillActivation {
  name: string
  /** Index in the conversation (`History.messages`) of the user message holding the call's tool_result. */
  message: number
}
