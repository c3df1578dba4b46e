import type { WebhookMark } from '../../protocol/webhook-event.js'
import type { MarksOf } from '../kit/index.js'
import type { VaultState } from './state.js'

/**
 * The webhook events a change of a vault makes: its own creation, archiving and deletion, and its credentials' (a
 * credential's deletion also when its vault is deleted). A vault's other updates make none (the client knows no
 * `vault.updated`).
 */
export const vaultMarks: MarksOf<VaultState> = (_key, was, next) => {
  const vault = (next ?? was)?.vault.id
  if (!vault) return []
  const out: WebhookMark[] = []
  if (!was) out.push({ type: 'vault.created', id: vault })
  const before = new Map((was?.credentials ?? []).map((c) => [c.credential.id, c.credential]))
  const after = new Map((next?.credentials ?? []).map((c) => [c.credential.id, c.credential]))
  for (const [id, c] of after) {
    const b = before.get(id)
    if (!b) out.push({ type: 'vault_credential.created', id, vault })
    else if (c.archived_at && !b.archived_at) out.push({ type: 'vault_credential.archived', id, vault })
  }
  for (const id of before.keys()) if (!after.has(id)) out.push({ type: 'vault_credential.deleted', id, vault })
  if (was && next?.vault.archived_at && !was.vault.archived_at) out.push({ type: 'vault.archived', id: vault })
  if (was && !next) out.push({ type: 'vault.deleted', id: vault })
  return out
}
