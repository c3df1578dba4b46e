/** What a session create or a request is checked against, and what admission makes: pins, copies, rubrics, the work item. */
export {
  agentResolver,
  capturedAgents,
  checkCreateInput,
  checkEnvironment,
  checkMcpEgress,
  checkSkillsRun,
  checkVaultRefs,
  sandboxTraits,
  snapshotAgent,
  type AgentResolver,
} from './admission.js'
export { checkAddable, checkChangeable, updateChanges } from './changes.js'
export { attachFiles, copyFor, dropCopies } from './copies.js'
export { attachMemoryStores, checkMemoryMounted, detachMemoryStores } from './memory.js'
export { EnvironmentRefs } from './references.js'
export { resolveRubrics } from './rubrics.js'
export { checkClientEvents } from './rules.js'
export { queueWork, selfHostedOf, stopWork, workAfterSend, workAfterTurn } from './self-hosted.js'
export { pinSessionSkills, requestedSkills, skillRefs, unpinSessionSkills } from './skills.js'
export { prefixed } from './admission.js'
