/** The session actor: one per session on its owner, the mailbox over its event log (actor.ts), and its parts. */
export { SessionActor } from './actor.js'
export type { ActorDeps, SessionSettings } from './deps.js'
