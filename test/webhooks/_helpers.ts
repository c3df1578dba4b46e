import { newId } from '../../protocol/ids.js'

/** A webhook event as a delivery carries it: a fresh `whe_` id and the exact JSON bytes of its thin payload. */
export function eventOf(type = 'session.status_idled'): { id: string; body: string; bytes: Uint8Array } {
  const id = newId('whe')
  const body = JSON.stringify({ type: 'event', id, created_at: new Date().toISOString(), data: { type, id: 'sesn_01X', workspace_id: 'wrkspc_troupe' } })
  return { id, body, bytes: new TextEncoder().encode(body) }
}
