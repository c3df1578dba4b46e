import { ApiError } from '../../protocol/errors/api-error.js'
import { VaultKind } from '../../protocol/ops/vault.js'
import type { ActorClient, Keyring } from '../kit/index.js'
import { askOwner } from './ask.js'

/**
 * What a session's host opens of its vaults' credentials: the one exception to "nothing on a request path opens a
 * secret" (docs/ARCHITECTURE.md, "Vaults"). The vaults' owners find the credential and answer its secret sealed as
 * stored (`credentials.resolve`), refreshing an OAuth token first when need be; the secret is opened here, with this
 * host's keyring, only to be sent where the credential says, and never logged or put in an event or an error.
 */

/** A bearer token for an MCP server, opened; `basis` names it (to say it was refused), `credentialId` where it is from. */
export interface OpenedBearer {
  token: string
  basis: string
  credentialId: string
  vaultId: string
}

/** A credential that matches but cannot be used (its refresh failed, it does not open here): the message holds no secret. */
export class CredentialUnusable extends Error {
  override name = 'CredentialUnusable'
}

export interface VaultSecrets {
  /**
   * The bearer for MCP server `url` from the first of `vaultIds` (in order) holding an active credential for it;
   * undefined when none does (a vault deleted since holds nothing). `stale`: the basis of a token the server refused,
   * renewed by its vault's owner if it can be. Throws `CredentialUnusable`.
   */
  mcpBearer(vaultIds: readonly string[], url: string, stale?: string): Promise<OpenedBearer | undefined>
}

export function vaultSecrets(client: ActorClient, keyring: Keyring | undefined): VaultSecrets {
  return {
    async mcpBearer(vaultIds, url, stale) {
      for (const vaultId of vaultIds) {
        const body = { mcp_server_url: url, ...(stale === undefined ? {} : { stale }) }
        const r = await askOwner(() => client.call(VaultKind.ops['credentials.resolve'], { id: vaultId, body })).catch((err: unknown) => {
          if (err instanceof ApiError && err.status === 404) return undefined
          throw new CredentialUnusable(`vault ${vaultId} could not be read: ${err instanceof Error ? err.message : String(err)}`)
        })
        if (!r?.credential_id) continue
        const credentialId = r.credential_id
        if (r.failure !== undefined || !r.token || !r.aad || !r.basis) throw new CredentialUnusable(r.failure ?? `credential ${credentialId} holds no token`)
        if (!keyring) throw new CredentialUnusable(`this host has no keyring to open credential ${credentialId}`)
        let token: string
        try {
          token = keyring.open(r.token, r.aad)
        } catch {
          throw new CredentialUnusable(`credential ${credentialId} does not open with this host's keyring (sealed with key ${r.token.kid})`)
        }
        return { token, basis: r.basis, credentialId, vaultId }
      }
      return undefined
    },
  }
}
