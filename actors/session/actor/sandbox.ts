import type { Mailbox } from '../../kit/index.js'
import { type SandboxOwner, type SessionSandbox, sandboxSpec, type Workdirs } from '../../workdir/index.js'
import type { SessionEvents } from './events.js'
import type { History } from '../history/index.js'

/**
 * The session's sandbox, bound through the workdir port: the actor's mailbox is its owner (it stops what the sandbox
 * does once the actor may have lost the session), what it reports is told as a `session.error` the turn goes on
 * after, and its spec is read afresh from the history before each tool.
 */
export function bindSandbox(h: History, events: SessionEvents, mb: Mailbox, workdirs: Workdirs): SessionSandbox {
  const owner: SandboxOwner = {
    get dead() {
      return mb.dead
    },
    alive: () => mb.alive(),
    checkServing: (then) => mb.checkServing(then),
    report: (message) => events.emit('session.error', { error: { type: 'unknown_error', message, retry_status: { type: 'retrying' } } }),
  }
  const spec = () => sandboxSpec({ env: h.rec.env, agent: h.session.agent, resources: h.session.resources, skills: h.rec.skills ?? [] })
  return workdirs.bind(h.session.id, spec, owner)
}
