/** A stored event as read back: JSON whose fields are looked at one by one, none trusted to be there. */
type Fields = Record<string, unknown>

const obj = (v: unknown): Fields => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Fields) : {})
const str = (v: unknown, dflt = ''): string => (v === undefined || v === null ? dflt : String(v))
const num = (v: unknown): number => (typeof v === 'number' ? v : 0)

/** A short, one-line account of a stored event, by type: what a person scanning a session's history needs. */
export function summarize(event: unknown): string {
  const ev = obj(event)
  switch (ev.type) {
    case 'user.message':
    case 'agent.message':
    case 'system.message':
      return quote(blocksText(ev.content))
    case 'agent.tool_use':
    case 'agent.custom_tool_use':
    case 'agent.mcp_tool_use':
      return `${str(ev.name, '?')} ${clip(JSON.stringify(ev.input ?? {}), 100)}`
    case 'agent.tool_result':
    case 'agent.mcp_tool_result':
    case 'user.custom_tool_result':
    case 'user.tool_result':
      return `${str(ev.tool_use_id ?? ev.mcp_tool_use_id)}${ev.is_error ? ' error' : ''} ${quote(blocksText(ev.content))}`
    case 'user.tool_confirmation':
      return `${str(ev.tool_use_id)} ${str(ev.result)}${ev.deny_message ? ` ${quote(str(ev.deny_message))}` : ''}`
    case 'session.status_idle': {
      const r = obj(ev.stop_reason)
      const ids = Array.isArray(r.event_ids) ? r.event_ids : []
      return ids.length ? `${str(r.type)} (${ids.join(', ')})` : str(r.type)
    }
    case 'session.error': {
      const e = obj(ev.error)
      const retry = obj(e.retry_status)
      return `${str(e.type, 'error')}: ${clip(str(e.message), 120)}${retry.type ? ` (${str(retry.type)})` : ''}`
    }
    case 'span.model_request_end': {
      const u = obj(ev.model_usage)
      return `${ev.is_error ? 'error' : 'ok'} in ${num(u.input_tokens)} out ${num(u.output_tokens)} tokens`
    }
    case 'session.usage': {
      const u = obj(ev.usage)
      const cost = obj(u.list_cost)
      return `in ${num(u.input_tokens)} out ${num(u.output_tokens)} tokens${u.list_cost ? ` ${str(cost.amount)}¢` : ''}`
    }
    case 'agent.thinking':
    case 'user.interrupt':
    case 'span.model_request_start':
    case 'session.status_running':
    case 'session.status_rescheduled':
    case 'session.status_terminated':
      return ''
    default: {
      const { type: _t, id: _i, processed_at: _p, ...rest } = ev
      return Object.keys(rest).length ? clip(JSON.stringify(rest), 120) : ''
    }
  }
}

function blocksText(content: unknown): string {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  return content
    .map((b) => {
      const block = obj(b)
      return block.type === 'text' ? str(block.text) : `[${str(block.type, '?')}]`
    })
    .join(' ')
}

const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s)
const quote = (s: string) => JSON.stringify(clip(s.replace(/\s+/g, ' ').trim(), 80))
