/** A short, one-line account of a stored event, by type: what a person scanning a session's history needs. */
export function summarize(ev: Record<string, any>): string {
  switch (ev.type) {
    case 'user.message':
    case 'agent.message':
    case 'system.message':
      return quote(blocksText(ev.content))
    case 'agent.tool_use':
    case 'agent.custom_tool_use':
    case 'agent.mcp_tool_use':
      return `${ev.name ?? '?'} ${clip(JSON.stringify(ev.input ?? {}), 100)}`
    case 'agent.tool_result':
    case 'agent.mcp_tool_result':
    case 'user.custom_tool_result':
    case 'user.tool_result':
      return `${ev.tool_use_id ?? ev.mcp_tool_use_id ?? ''}${ev.is_error ? ' error' : ''} ${quote(blocksText(ev.content))}`
    case 'user.tool_confirmation':
      return `${ev.tool_use_id} ${ev.result}${ev.deny_message ? ` ${quote(ev.deny_message)}` : ''}`
    case 'session.status_idle': {
      const r = ev.stop_reason ?? {}
      return r.event_ids?.length ? `${r.type} (${r.event_ids.join(', ')})` : String(r.type ?? '')
    }
    case 'session.error': {
      const e = ev.error ?? {}
      return `${e.type ?? 'error'}: ${clip(String(e.message ?? ''), 120)}${e.retry_status ? ` (${e.retry_status.type})` : ''}`
    }
    case 'span.model_request_end': {
      const u = ev.model_usage ?? {}
      return `${ev.is_error ? 'error' : 'ok'} in ${u.input_tokens ?? 0} out ${u.output_tokens ?? 0} tokens`
    }
    case 'session.usage': {
      const u = ev.usage ?? {}
      return `in ${u.input_tokens ?? 0} out ${u.output_tokens ?? 0} tokens${u.list_cost ? ` ${u.list_cost.amount}¢` : ''}`
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
  return content.map((b) => (b?.type === 'text' ? String(b.text) : `[${b?.type ?? '?'}]`)).join(' ')
}

const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s)
const quote = (s: string) => JSON.stringify(clip(s.replace(/\s+/g, ' ').trim(), 80))
