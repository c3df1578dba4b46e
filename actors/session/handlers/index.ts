/** The session kind's op handlers: each asks the actor (or reads a record) and never touches its history. */
export { sessionOps } from './behaviour.js'
export { listSessions } from './list.js'
