/** The state a session's events make (History), what replay derives, and the stored record's shape. */
export { History } from './history.js'
export type { OpenTool } from './open-tool.js'
export { ONGOING_INTERVAL_MS, outcomeIdOf, type OpenOutcome } from './outcomes.js'
export { SKILL_TOOL, type SkillActivation } from './skill-launches.js'
export { SESSION_PREFIX, sessionKey, statsOf, viewOf, type SessionRecord, type SessionSkill } from './state.js'
export { transcript } from './transcript.js'
export { RunningByKey } from './running-by-key.js'
