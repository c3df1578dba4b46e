export { SessionActor } from './actor.js'
export type { ActorDeps, SessionSettings } from './deps.js'
