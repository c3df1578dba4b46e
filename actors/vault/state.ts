import type { Sealed } from '../kit/index.js'
import type { Credential, Vault } from '../../protocol/schemas/vault.js'

/**
 * How vaults sit in their bucket:
 *
 *   troupe_vaults  vault.<id>  the vault's state (below): the actor's record (the kit's `<kind>.<id>`), its
 *                              credentials inside it, written only by the owner of its partition, fenced by its
 *                              revision; a create (any host) is the one write that makes it, a delete removes it.
 *
 * A credential's secrets are sealed with the operator keyring before they reach the state (never in clear in the
 * bucket), each bound to the credential's id and the field it fills (`secretAad`), and never shown: a reply is the
 * `credential` beside them, which holds only what the official client's response types hold.
 */
export interface VaultState {
  vault: Vault
  /** Fingerprint of the create request, when it carried an Idempotency-Key: its retries must match it. */
  created_by?: string
  /** Oldest first. */
  credentials: StoredCredential[]
}

/** The fields of a credential's `auth` that hold secrets: sealed when stored, never returned. */
export type SecretField = 'token' | 'access_token' | 'refresh_token' | 'client_secret' | 'secret_value'

export interface StoredCredential {
  /** The credential as the API shows it. */
  credential: Credential
  /** Fingerprint of the create request, when it carried an Idempotency-Key. */
  created_by?: string
  /** Its secrets, sealed; emptied when it is archived. */
  secrets: Partial<Record<SecretField, Sealed>>
}

export const VAULT_PREFIX = 'vault.'

/** Active credentials a vault may hold (the vendor's limit). */
export const MAX_ACTIVE_CREDENTIALS = 20
/** Credentials a vault may hold, archived ones included (they keep no secrets), so its record stays small. */
export const MAX_CREDENTIALS = 100

/** The associated data a secret is sealed with: a ciphertext moved to another credential or field does not open. */
export const secretAad = (credentialId: string, field: SecretField) => `${credentialId}/${field}`
