import type { TextBlock } from '../../../protocol/session-events.js'
import { primaryThreadId } from '../../../protocol/ids.js'
import { errorResult, textResult, type ToolResult } from '../../../sandbox/types.js'
import type { History, OpenTool } from '../history/index.js'
import type { ChildThread } from './children.js'
import { transcript } from '../history/index.js'
import type { Coordinator, Emitter, SendOutcome } from '../turn/index.js'
import { advisorThreadId, childThreadId, coordinatorToolNames, listAgents, MAX_CHILD_THREADS, type Member } from '../turn/index.js'

/** What the coordinator needs of its actor. */
export interface ThreadHost {
  readonly h: History
  readonly events: Emitter
  readonly members: readonly Member[]
  readonly advisor: Member | undefined
  child(id: string): ChildThread | undefined
  /** Makes the child thread `id` running `member`'s definition (its history empty). */
  spawn(id: string, member: Member): ChildThread
}

/** A coordinator's sends and lists (the primary thread's `ToolRunner` calls these through `Coordinator`, turn/types.ts). */
export class ThreadCoordinator implements Coordinator {
  /** The tools it answers (`coordinatorToolNames`). */
  readonly tools: ReadonlySet<string>

  constructor(private readonly host: ThreadHost) {
    this.tools = coordinatorToolNames(host.members, host.advisor)
  }

  list(): ToolResult {
    return listAgents(this.host.members)
  }

  /** Runs (or, after a park or a takeover, resumes) the child of send `t` until it answers, parks or is stopped. */
  send(t: OpenTool, signal: AbortSignal): Promise<SendOutcome> {
    const id = childThreadId(t.eventId)
    const input = t.input as { agent?: unknown; message?: unknown }
    const member = this.host.members.find((m) => m.name === input.agent)
    const message = typeof input.message === 'string' && input.message.trim() ? input.message : undefined
    const start = member && message !== undefined ? { member, message } : undefined
    if (this.host.child(id)) return this.delegate(id, start, signal)
    if (!member) {
      const names = this.host.members.map((m) => JSON.stringify(m.name)).join(', ')
      return Promise.resolve({ result: errorResult(`No agent is named ${JSON.stringify(input.agent)}; send_to_agent takes one of: ${names}.`) })
    }
    if (!start) return Promise.resolve({ result: errorResult('send_to_agent needs a message: the task for the agent, complete in itself.') })
    return this.delegate(id, start, signal)
  }

  /**
   * The advisor's review (SPEC "Coordinator topology"): one tool-free request with the advisor's model over the
   * conversation so far (given as a transcript, in a thread of its own), its answer the call's result.
   */
  advise(t: OpenTool, signal: AbortSignal): Promise<SendOutcome> {
    const { advisor } = this.host
    const id = advisorThreadId(t.eventId)
    return this.delegate(id, advisor && { member: advisor, message: transcript(this.host.h.messages) }, signal)
  }

  /**
   * Starts thread `id` with `start` (unless it exists: then it resumes), runs it, and answers with its reply. A child
   * whose input was never stored (its host stopped after storing the thread but before its first message) is given
   * it again: the child had run nothing, as no side effect starts before what leads to it is stored.
   */
  private async delegate(id: string, start: { member: Member; message: string } | undefined, signal: AbortSignal): Promise<SendOutcome> {
    const { host } = this
    let child = host.child(id)
    if (!child) {
      if (!start) return { result: errorResult('Not run: the thread this call would run in was never started.') }
      if (countChildren(host) >= MAX_CHILD_THREADS) {
        return { result: errorResult(`This session has started ${MAX_CHILD_THREADS} agent threads, the most it may; no more can be started.`) }
      }
      child = host.spawn(id, start.member)
      host.events.emit('agent.thread_message_sent', {
        to_session_thread_id: id,
        to_agent_name: start.member.name,
        content: [{ type: 'text', text: start.message }],
      })
    }
    if (!child.h.messages.length && start) {
      child.events.emit('agent.thread_message_received', {
        from_session_thread_id: primaryThreadId(host.h.session.id),
        from_agent_name: host.h.session.agent.name,
        content: [{ type: 'text', text: start.message }],
      })
    }
    await child.run(signal)
    if (signal.aborted) return 'stopped'
    const h = child.h
    if (h.running) {
      // Its own interrupt stopped it: it goes idle, and the send answers with what happened.
      child.turns.idle({ type: 'end_turn' })
      return { result: errorResult(`The agent ${child.member.name} was interrupted before it answered.`) }
    }
    const stop = h.stopReason
    if (stop?.type === 'requires_action') return { parkedOn: stop.event_ids }
    if (stop?.type === 'budget_reached') return { parkedOn: 'budget' }
    if (stop?.type !== 'end_turn') {
      return { result: errorResult(`The agent ${child.member.name} could not finish its task (${stop?.type ?? 'stopped'}); see its thread ${id}.`) }
    }
    const reply = lastReply(h)
    const content: TextBlock[] = [{ type: 'text', text: reply }]
    child.events.emit('agent.thread_message_sent', {
      to_session_thread_id: primaryThreadId(host.h.session.id),
      to_agent_name: host.h.session.agent.name,
      content,
    })
    host.events.emit('agent.thread_message_received', { from_session_thread_id: id, from_agent_name: child.member.name, content })
    return { result: textResult(reply) }
  }
}

const countChildren = (host: ThreadHost) => host.h.children.size

/** The text of a child's last answer (its last assistant message); a turn that said nothing answers so. */
function lastReply(h: History): string {
  for (let i = h.messages.length - 1; i >= 0; i--) {
    const m = h.messages[i]!
    if (m.role !== 'assistant') break
    if (typeof m.content === 'string') return m.content
    const text = m.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('\n')
    if (text) return text
  }
  return '(The agent finished without a reply.)'
}
