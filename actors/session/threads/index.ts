/**
 * Threads (issue 28): a coordinator's primary thread delegates to its roster through two tools only it is offered,
 * `list_agents` and `send_to_agent`. A send is a task: it starts a child thread of its own running the member's
 * definition as the session snapshotted it (never re-loaded), whose id derives from the send's tool use, so a send
 * retried after a takeover finds its child and resumes it rather than start a second one. Children have neither tool
 * (depth 1). Each thread has its own history on its own subject (`troupe.events.<sid>.<thread id>`), turn loop and
 * abort signal, inside the one session actor (actor/actor.ts); their writes share the session's one order (log/appends.ts).
 *
 * children.ts: a child's record, history, emitter and view; coordinator.ts: the sends, lists and advice the primary
 * thread's tool runner asks of `Coordinator` (turn/types.ts). The roster and the tools it is offered: turn/roster.ts.
 */
export { type ChildThread, childHistory, pageOfThreads, ThreadEmitter, threadView } from './children.js'
export { ThreadCoordinator, type ThreadHost } from './coordinator.js'
