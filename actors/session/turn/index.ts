/** A thread's turn: model requests, tools and their runner, the grader, skills in context; types.ts is what it asks of the rooms above. */
export { modelClient, type Preview } from './model.js'
export {
  ADVISOR_TOOL,
  MAX_CHILD_THREADS,
  SEND_TO_AGENT,
  advisorOf,
  advisorThreadId,
  childThreadId,
  coordinatorToolNames,
  listAgents,
  rosterOf,
  type Member,
} from './roster.js'
export { SkillTexts } from './skill-texts.js'
export { ToolLock, ToolRunner } from './tool-runner.js'
export { TurnLoop, ZERO_USAGE, type TurnParts } from './turn.js'
export type { Coordinator, Emitter, SendOutcome, StatusArgs, TurnDeps, TurnEventType } from './types.js'
