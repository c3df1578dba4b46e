import { fail } from '../../../protocol/errors/fail.js'
import type { ClientEvent } from '../../../protocol/session-events.js'
import type { EventParamsT } from '../../../protocol/schemas/events.js'
import type { History } from '../history/index.js'
import { primaryThreadId } from '../../../protocol/ids.js'

/**
 * What a session accepts from a client right now (WIRE §7.1), judged against its state, with the field named
 * in each refusal. Shapes were checked by the route's schema already.
 */
export function checkClientEvents(h: History, events: EventParamsT[]): void {
  if (h.session.archived_at) throw fail('session_archived', h.session.id)
  // Results already waiting in the mailbox count as given.
  const answered = new Set<string>()
  for (const e of h.pending.values()) {
    const id = resultTarget(e)
    if (id) answered.add(id)
  }
  let defined: string | undefined
  events.forEach((e, i) => {
    const at = `events[${i}]`
    if ('session_thread_id' in e && e.session_thread_id != null) {
      const thread = e.session_thread_id
      if (thread !== primaryThreadId(h.session.id) && !h.children.has(thread))
        throw fail('session_thread_not_found', `${at}.session_thread_id`, h.session.id, thread)
    }
    switch (e.type) {
      case 'user.define_outcome': {
        // One outcome at a time: the open one, or one waiting in the mailbox or earlier in this request.
        const open = h.outcome?.id ?? [...h.pending.values()].find((x) => x.type === 'user.define_outcome')?.outcome_id ?? defined
        if (open !== undefined) throw fail('outcome_in_progress', at, open)
        defined = `defined at events[${i}]`
        break
      }
      case 'user.tool_result': {
        if (h.rec.env.type !== 'self_hosted') {
          throw fail(
            'invalid_request',
            `${at}: user.tool_result is only accepted in sessions of self_hosted environments (use user.custom_tool_result for custom tools)`,
          )
        }
        expectOpen(h, answered, e.tool_use_id, 'client', `${at}.tool_use_id`)
        break
      }
      case 'user.custom_tool_result':
        expectOpen(h, answered, e.custom_tool_use_id, 'custom', `${at}.custom_tool_use_id`)
        break
      case 'user.tool_confirmation': {
        const t = h.findOpen(e.tool_use_id)
        if (!t?.ask || t.confirmation || answered.has(e.tool_use_id)) {
          throw fail('invalid_request', `${at}.tool_use_id: ${e.tool_use_id} is not a tool use waiting for confirmation in this session`)
        }
        answered.add(e.tool_use_id)
        break
      }
    }
  })
}

function expectOpen(h: History, answered: Set<string>, id: string, kind: 'client' | 'custom', field: string) {
  const t = h.findOpen(id)
  if (!t || t.kind !== kind || answered.has(id)) {
    const what = kind === 'custom' ? 'an agent.custom_tool_use' : 'an agent.tool_use'
    throw fail('invalid_request', `${field}: ${id} is not ${what} waiting for a result in this session`)
  }
  answered.add(id)
}

function resultTarget(e: ClientEvent): string | undefined {
  if (e.type === 'user.tool_result' || e.type === 'user.tool_confirmation') return e.tool_use_id
  if (e.type === 'user.custom_tool_result') return e.custom_tool_use_id
  return undefined
}
