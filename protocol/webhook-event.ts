import { WORKSPACE_ID } from './subjects.js'

/**
 * The thin payload of a webhook event (SPEC "Webhook events"): exactly these fields, in this order, so the same
 * lifecycle change always makes the same bytes (a repeat after a crash is the same event, byte for byte).
 */
export function thinEvent(id: string, at: number, type: string, dataId: string, thread?: string): string {
  // A thread's event names its thread beside the session (WIRE §12.1: `data.id` stays the session's).
  const data =
    thread === undefined ? { type, id: dataId, workspace_id: WORKSPACE_ID } : { type, id: dataId, workspace_id: WORKSPACE_ID, session_thread_id: thread }
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
