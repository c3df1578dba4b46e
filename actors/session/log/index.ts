export { Appends } from './appends.js'
export { SessionTails } from './local-tails.js'
export { EventLog, checkFits, ensureEventsStream, lastSequence, purgeSession, readSession } from './log.js'
export { listEvents } from './pages.js'
