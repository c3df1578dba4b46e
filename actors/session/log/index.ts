/** A session's event log on TROUPE_EVENTS: appends with their fences, reads, pages, this process's live tails. */
export { Appends } from './appends.js'
export { SessionTails } from './local-tails.js'
export { EventLog, checkFits, ensureEventsStream, lastSequence, deleteSessionHistory, readSession } from './log.js'
export { listEvents } from './pages.js'
export { readSessionEvents } from './event-reader.js'
