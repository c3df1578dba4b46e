import { fail } from '../../protocol/errors/fail.js'
import { VaultKind } from '../../protocol/ops/vault.js'
import { Buckets } from '../../protocol/subjects.js'
import { ensureOutbox, listedKind, NO_EXCEPTIONS, Outbox } from '../kit/index.js'
import { egressFetch } from '../mcp/index.js'
import type { Fetch } from './http-answer.js'
import { vaultOps } from './behaviour.js'
import { vaultMarks } from './marks.js'
import { VAULT_PREFIX, type VaultState } from './state.js'

export { type EnvSecret, type EnvSecrets, EnvSecretSource, secretPlaceholder } from './env-secrets.js'

/**
 * Vaults (kit/listed-kind.ts), their credentials inside their state with secrets sealed by the operator keyring
 * (`HostSettings.keyring`). Without a keyring, reads and deletes work and every other write answers 422. Sessions use
 * their credentials for MCP through `vaultSecrets` (secrets.ts); OAuth tokens are refreshed by the owner (tokens.ts).
 */
export const vaultKind = listedKind({
  contract: VaultKind,
  bucket: Buckets.vaults,
  marks: vaultMarks,
  missing: (id) => fail('vault_not_found', id),
  prefix: VAULT_PREFIX,
  view: (s: VaultState) => s.vault,
  async ops(ctx, states, projection) {
    await ensureOutbox(ctx.storage)
    return vaultOps({
      states,
      projection,
      keyring: ctx.settings.keyring,
      keyringConflict: ctx.keyringConflict,
      outbox: new Outbox(ctx.js),
      log: ctx.log,
      client: ctx.client,
      // A credential's requests go where MCP connections may (TROUPE_MCP_ALLOW_HOSTS): never to a private address unasked.
      fetch: egressFetch({ except: ctx.settings.mcpAllowHosts ?? NO_EXCEPTIONS }) as Fetch,
    })
  },
})

export { CredentialUnusable, type OpenedBearer, type VaultSecrets, vaultSecrets } from './secrets.js'
