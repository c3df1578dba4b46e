import type { Tool as ApiTool, ContentBlockParam } from '@anthropic-ai/sdk/resources/messages'
import { decodeCursor, encodeCursor, isRecordPosition } from '../../../protocol/cursor.js'
import type { SessionEvent } from '../../../protocol/events.js'
import type { Page } from '../../../protocol/page.js'
import type { ThreadListInput } from '../../../protocol/schemas/thread.js'
import { idFromKey, primaryThreadId } from '../../../protocol/ids.js'
import type { AdvisorEntry } from '../../../protocol/schemas/agent.js'
import type { SessionAgent, SessionThread, ThreadAgent } from '../../../protocol/session.js'
import { errorResult, textResult, type ToolResult } from '../../../sandbox/types.js'
import { emptyUsage, type UsageTotals } from '../billing/usage.js'
import { toWireUsage } from '../billing/wire-usage.js'
import type { SessionEvents } from '../actor/events.js'
import { History, type OpenTool } from '../history/history.js'
import { ADVISOR_TOOL, LIST_AGENTS, SEND_TO_AGENT } from '../../agent/roster.js'
import type { SessionRecord } from '../history/state.js'
import { transcript } from '../history/transcript.js'
import type { Emitter, TurnLoop } from '../turn/turn.js'

export { ADVISOR_TOOL, LIST_AGENTS, SEND_TO_AGENT }

/**
 * Threads (issue 28): a coordinator's primary thread delegates to its roster through two tools only it is offered,
 * `list_agents` and `send_to_agent`. A send is a task: it starts a child thread of its own running the member's
 * definition as the session snapshotted it (never re-loaded), whose id derives from the send's tool use, so a send
 * retried after a takeover finds its child and resumes it rather than start a second one. Children have neither tool
 * (depth 1). Each thread has its own history on its own subject (`troupe.events.<sid>.<thread id>`), turn loop and
 * abort signal, inside the one session actor (actor.ts); their writes share the session's one order (appends.ts).
 */

export const ADVISOR_NAME = 'vendor.advisor'

/** What the advisor is told it is for; the conversation it reviews follows as one message. */
const ADVISOR_SYSTEM = [
  'You are an advisor to an AI agent working on a task. You are shown its conversation so far: the requests it got, what',
  'it said, the tools it called and what they returned. Review the work: point out mistakes, risks and anything missed,',
  'and recommend the next steps. Be concise and specific; you cannot call tools.',
].join(' ')

/** Child threads a session may start: each send starts one, so this bounds a coordinator's sends. */
export const MAX_CHILD_THREADS = 100

/** A roster member as the coordinator's tools name it. */
export interface Member {
  /** Its agent's name; a later member of the same name gets ` #2`, ` #3`… so every member can be addressed. */
  name: string
  /** The definition its threads run. */
  agent: ThreadAgent
  /** What its threads show as their `agent` (the advisor's roster entry, for the advisor). */
  shown: ThreadAgent | AdvisorEntry
}

/**
 * The coordinator's members, in roster order (the advisor is not one: it has no definition to run). A
 * `multiagent_20261001` agent's are its `subagents.predefined_agents` (its workflows never run: not built).
 */
export function rosterOf(agent: SessionAgent): Member[] {
  const seen = new Map<string, number>()
  const out: Member[] = []
  const m = agent.multiagent
  const entries = m?.type === 'coordinator' ? m.agents : m?.subagents.type === 'enabled' ? m.subagents.predefined_agents : []
  for (const e of entries) {
    if (e.type !== 'agent') continue
    const n = (seen.get(e.name) ?? 0) + 1
    seen.set(e.name, n)
    out.push({ name: n === 1 ? e.name : `${e.name} #${n}`, agent: e, shown: e })
  }
  return out
}

/**
 * The roster's advisor (SPEC "Coordinator topology"): offered to the primary thread only as a no-argument tool, never
 * a member (not listed, not a send's target). Its threads run this definition: the entry's model, tool-free.
 */
export function advisorOf(agent: SessionAgent): Member | undefined {
  const m = agent.multiagent
  // A multiagent_20261001 advisor shows on its threads as a coordinator's roster entry would.
  const entry: AdvisorEntry | undefined =
    m?.type === 'coordinator'
      ? m.agents.find((e): e is AdvisorEntry => e.type === 'advisor')
      : m?.advisor.type === 'enabled'
        ? { type: 'advisor', model: m.advisor.model }
        : undefined
  if (!entry) return undefined
  const definition: ThreadAgent = {
    id: ADVISOR_NAME,
    type: 'agent',
    version: 1,
    name: ADVISOR_NAME,
    description: null,
    system: ADVISOR_SYSTEM,
    model: { id: entry.model },
    tools: [],
    mcp_servers: [],
    skills: [],
    execution_identity: agent.execution_identity,
  }
  return { name: ADVISOR_NAME, agent: definition, shown: entry }
}

/** The id of the advisor thread a call starts: derived from the call's tool use, as a send's child. */
export const advisorThreadId = (toolUseId: string): string => idFromKey('sthr', 'advisor', toolUseId)

/** The id of the child a send starts: derived from the send's tool use, so one send never makes two children. */
export const childThreadId = (toolUseId: string): string => idFromKey('sthr', 'send_to_agent', toolUseId)

/** The coordinator tools, offered to a coordinator's primary thread only: the roster's, and the advisor's. */
export function coordinatorTools(members: readonly Member[], advisor: Member | undefined): ApiTool[] {
  const tools: ApiTool[] = []
  if (advisor) {
    tools.push({
      name: ADVISOR_TOOL,
      description:
        'Asks your advisor, a separate model, to review your work so far (it sees this conversation) and recommend next steps. Takes no input; returns the review.',
      input_schema: { type: 'object', properties: {} },
    })
  }
  if (!members.length) return tools
  return [
    ...tools,
    {
      name: LIST_AGENTS,
      description: 'Lists the agents you can delegate to with send_to_agent: each one’s name and description.',
      input_schema: { type: 'object', properties: {} },
    },
    {
      name: SEND_TO_AGENT,
      description: [
        'Sends a task to one of your agents and waits for its answer, which this tool returns. The agent starts afresh',
        'for each task (it does not see this conversation, nor earlier tasks): say everything it needs in the message.',
        'Several calls in one response run at the same time.',
      ].join(' '),
      input_schema: {
        type: 'object',
        properties: {
          agent: { type: 'string', enum: members.map((m) => m.name), description: 'The agent’s name, as list_agents gives it' },
          message: { type: 'string', description: 'The task, complete in itself' },
        },
        required: ['agent', 'message'],
      },
    },
  ]
}

/** The names of the tools a coordinator's primary thread has (what routes to `Coordinator`). */
export const coordinatorToolNames = (members: readonly Member[], advisor: Member | undefined): ReadonlySet<string> =>
  new Set([...(advisor ? [ADVISOR_TOOL] : []), ...(members.length ? [LIST_AGENTS, SEND_TO_AGENT] : [])])

/** What `list_agents` answers. */
export function listAgents(members: readonly Member[]): ToolResult {
  return textResult(JSON.stringify(members.map((m) => ({ name: m.name, description: m.agent.description ?? null }))))
}

/**
 * The record a child's history is built on: the session's, with the member's definition as its agent and nothing
 * spent yet (a child's usage is its own; the session sums its threads'). Never stored: a child's state is its events.
 */
export function childRecord(rec: SessionRecord, member: ThreadAgent, createdAt: string): SessionRecord {
  const agent: SessionAgent = { ...member, multiagent: null }
  return {
    ...rec,
    session: { ...rec.session, agent, status: 'idle', created_at: createdAt, updated_at: createdAt, archived_at: null },
    totals: emptyUsage(),
    running_since: null,
    // `self` runs the coordinator's skills; another member its own, beneath /workspace/skills/.agents/<its id>/.
    skills: rec.skills?.filter((s) => s.member === (member.id === rec.session.agent.id ? undefined : member.id)),
  }
}

/** A child thread's history, ready for its events (a replay's, or a new child's). */
export const childHistory = (rec: SessionRecord, id: string, member: ThreadAgent, createdAt: string): History =>
  new History(childRecord(rec, member, createdAt), id)

/** Events of a child the session's own list and stream carry too (with `session_thread_id`): its statuses, and tool uses the client must answer. */
const crossPosted = (ev: SessionEvent) =>
  ev.type.startsWith('session.thread_status_') || ev.type === 'agent.custom_tool_use' || (ev.type === 'agent.tool_use' && ev.evaluated_permission === 'ask')

/**
 * A child's events as its turn loop emits them: statuses become `session.thread_status_*` naming the thread, and what
 * the client must see is copied to the primary's subject.
 */
export class ThreadEmitter implements Emitter {
  constructor(
    private readonly own: SessionEvents,
    private readonly primary: SessionEvents,
    private readonly thread: string,
    private readonly name: string,
  ) {}

  emit(type: string, fields: Record<string, unknown>, id?: string): SessionEvent {
    const status = type.startsWith('session.status_')
    const ev = this.own.emit(
      status ? `session.thread_status_${type.slice('session.status_'.length)}` : type,
      status ? { session_thread_id: this.thread, agent_name: this.name, ...fields } : fields,
      id,
    )
    if (crossPosted(ev)) this.primary.crossPost(ev, this.thread)
    return ev
  }

  readonly preview: Emitter['preview'] = (type, payload, of) => this.own.preview(type, payload, of)
}

/** One child thread of a session, alive in its actor: its history, writes and turns. */
export interface ChildThread {
  readonly id: string
  readonly member: Member
  readonly h: History
  readonly events: ThreadEmitter
  readonly turns: TurnLoop
  /** Aborts its running turn only (an interrupt naming it). */
  abort(): void
  /** Runs its turn until it parks, ends or is aborted (its own abort, or `signal`). */
  run(signal: AbortSignal): Promise<void>
  /** The last stored sequence of its subject (once what it queued is stored: `Mailbox.settled`). */
  lastSeq(): number
}

/** A thread as the API shows it (WIRE §8). `parent`: the primary's id, for a child. */
export function threadView(
  h: History,
  id: string,
  parent: string | null,
  agent: ThreadAgent | AdvisorEntry,
  totals: UsageTotals,
  now = Date.now(),
): SessionThread {
  const s = h.session
  const since = h.rec.running_since
  const activeMs = totals.active_ms + (since === null ? 0 : Math.max(0, now - since))
  const end = s.archived_at ? Date.parse(s.archived_at) : now
  // A thread's list cost is its tokens' alone: the session's runtime is the session's (WIRE §8).
  const usage = { ...toWireUsage({ ...totals, active_ms: 0 }), active_seconds: activeMs / 1000 }
  return {
    id,
    type: 'session_thread',
    session_id: s.id,
    parent_thread_id: parent,
    agent,
    status: s.archived_at ? 'terminated' : h.status,
    stats: { active_seconds: activeMs / 1000, duration_seconds: Math.max(0, end - Date.parse(s.created_at)) / 1000 },
    usage,
    workflow_run_id: null,
    created_at: s.created_at,
    updated_at: s.updated_at,
    archived_at: s.archived_at,
  }
}

/** What the coordinator needs of its actor. */
export interface ThreadHost {
  readonly h: History
  readonly events: SessionEvents
  readonly members: readonly Member[]
  readonly advisor: Member | undefined
  child(id: string): ChildThread | undefined
  /** Makes the child thread `id` running `member`'s definition (its history empty). */
  spawn(id: string, member: Member): ChildThread
}

/**
 * A send as its tool use's result, or what it is parked on: the child's events the client must answer, or the
 * budget. `stopped`: the session's turn was interrupted or the actor stopped; the send stays open.
 */
export type SendOutcome = { result: ToolResult } | { parkedOn: string[] | 'budget' } | 'stopped'

/** A coordinator's sends and lists (the primary thread's `ToolRunner` calls these). */
export class Coordinator {
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
    if (this.host.child(id)) return this.delegate(id, undefined, signal)
    const input = t.input as { agent?: unknown; message?: unknown }
    const member = this.host.members.find((m) => m.name === input.agent)
    if (!member) {
      const names = this.host.members.map((m) => JSON.stringify(m.name)).join(', ')
      return Promise.resolve({ result: errorResult(`No agent is named ${JSON.stringify(input.agent)}; send_to_agent takes one of: ${names}.`) })
    }
    if (typeof input.message !== 'string' || !input.message.trim()) {
      return Promise.resolve({ result: errorResult('send_to_agent needs a message: the task for the agent, complete in itself.') })
    }
    return this.delegate(id, { member, message: input.message }, signal)
  }

  /**
   * The advisor's review (SPEC "Coordinator topology"): one tool-free request with the advisor's model over the
   * conversation so far (given as a transcript, in a thread of its own), its answer the call's result.
   */
  advise(t: OpenTool, signal: AbortSignal): Promise<SendOutcome> {
    const { advisor } = this.host
    const id = advisorThreadId(t.eventId)
    if (this.host.child(id) || !advisor) return this.delegate(id, undefined, signal)
    return this.delegate(id, { member: advisor, message: transcript(this.host.h.messages) }, signal)
  }

  /** Starts thread `id` with `start` (unless it exists: then it resumes), runs it, and answers with its reply. */
  private async delegate(id: string, start: { member: Member; message: string } | undefined, signal: AbortSignal): Promise<SendOutcome> {
    const { host } = this
    let child = host.child(id)
    if (!child) {
      if (!start) return { result: errorResult('Not run: the thread this call would run in was never started.') }
      const { member, message } = start
      if (countChildren(host) >= MAX_CHILD_THREADS) {
        return { result: errorResult(`This session has started ${MAX_CHILD_THREADS} agent threads, the most it may; no more can be started.`) }
      }
      const content: ContentBlockParam[] = [{ type: 'text', text: message }]
      child = host.spawn(id, member)
      host.events.emit('agent.thread_message_sent', { to_session_thread_id: id, to_agent_name: member.name, content })
      child.events.emit('agent.thread_message_received', {
        from_session_thread_id: primaryThreadId(host.h.session.id),
        from_agent_name: host.h.session.agent.name,
        content,
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
    const content: ContentBlockParam[] = [{ type: 'text', text: reply }]
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

/** One page of a session's threads, in the order they were made (the primary first); `statuses` filters. */
export function pageOfThreads(sessionId: string, all: readonly SessionThread[], q: ThreadListInput): Page<SessionThread> {
  const statuses = q.statuses === undefined ? undefined : [q.statuses].flat()
  const filters = { session_id: sessionId, statuses: statuses ? [...statuses].sort() : null }
  const after = decodeCursor('session_threads', filters, q.page, isRecordPosition)
  const matching = statuses ? all.filter((x) => (statuses as string[]).includes(x.status)) : all
  let start = 0
  if (after) {
    // Threads are never removed: the one the last page ended at is still there (or it ended at one filtered out since).
    const i = all.findIndex((x) => x.id === after.id)
    start = matching.findIndex((x) => all.indexOf(x) > i)
    if (start < 0) start = matching.length
  }
  const data = matching.slice(start, start + (q.limit ?? 20))
  const last = data.at(-1)
  const more = start + data.length < matching.length
  return { data, next_page: more && last ? encodeCursor('session_threads', filters, { id: last.id, created_at: last.created_at }) : null }
}
