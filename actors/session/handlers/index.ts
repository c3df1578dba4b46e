export { sessionOps } from './behaviour.js'
export { listSessions } from './list.js'
