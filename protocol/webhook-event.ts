import { WORKSPACE_ID } from './subjects.js'

/**
 * The thin payload of a webhook event (SPEC "Webhook events"): exactly these fields, in this order, so the same
 * lifecycle change always makes the same bytes (a repeat after a crash is the same event, byte for byte).
 */
export function thinEvent(id: string, at: number, type: string, dataId: string, thread?: string, vault?: string): string {
  // A thread's event names its thread beside the session (WIRE §12.1: `data.id` stays the session's); a vault
  // credential's names its vault (the client's `vault_id`).
  const data = {
    type,
    id: dataId,
    workspace_id: WORKSPACE_ID,
    ...(thread === undefined ? {} : { session_thread_id: thread }),
    ...(vault === undefined ? {} : { vault_id: vault }),
  }
  return JSON.stringify({ type: 'event', id, created_at: new Date(at).toISOString(), data })
}

/** What the fan-out needs of a payload it reads back: its id, type and occurrence time (ms); undefined if not one. */
export function readThinEvent(json: string): { id: string; type: string; at: number } | undefined {
  try {
    const e = JSON.parse(json) as { id?: unknown; created_at?: unknown; data?: { type?: unknown } }
    const at = typeof e.created_at === 'string' ? Date.parse(e.created_at) : Number.NaN
    if (typeof e.id !== 'string' || typeof e.data?.type !== 'string' || !Number.isFinite(at)) return undefined
    return { id: e.id, type: e.data.type, at }
  } catch {
    return undefined
  }
}

/**
 * A lifecycle event written with the record change that makes it (the header `Troupe-Webhook` of the KV write: the
 * change and its event are one message). `id` is `data.id` (the agent, environment, vault, credential, deployment, run
 * or session); `vault` a credential's vault (`data.vault_id`); `source` what the event's id is derived from, when it is
 * also published elsewhere under that id (default: the write's place in its stream).
 */
export interface WebhookMark {
  type: string
  id: string
  vault?: string
  source?: string
}

/** The header of a record write that carries the lifecycle events it makes. */
export const WEBHOOK_MARK_HEADER = 'Troupe-Webhook'

/** The header's value: `type id[ vault][ @source]` per event, comma-separated (ids and types hold neither). */
export const formatMarks = (marks: readonly WebhookMark[]) =>
  marks.map((m) => [m.type, m.id, ...(m.vault ? [m.vault] : []), ...(m.source ? [`@${m.source}`] : [])].join(' ')).join(',')

export function parseMarks(value: string): WebhookMark[] {
  const out: WebhookMark[] = []
  for (const item of value.split(',')) {
    const [type, id, ...more] = item.split(' ')
    if (!type || !id) continue
    const vault = more.find((x) => !x.startsWith('@'))
    const source = more.find((x) => x.startsWith('@'))?.slice(1)
    out.push({ type, id, ...(vault ? { vault } : {}), ...(source ? { source } : {}) })
  }
  return out
}
