import { fail } from '../../protocol/errors/fail.js'
import { VaultKind } from '../../protocol/ops/vault.js'
import { Buckets } from '../../protocol/subjects.js'
import { listedKind } from '../kit/index.js'
import { vaultOps } from './behaviour.js'
import { vaultMarks } from './marks.js'
import { VAULT_PREFIX, type VaultState } from './state.js'

export { type EnvSecret, type EnvSecrets, EnvSecretSource, secretPlaceholder } from './env-secrets.js'

/**
 * Vaults (kit/listed-kind.ts), their credentials inside their state with secrets sealed by the operator keyring
 * (`HostSettings.keyring`). Without a keyring, reads and deletes work and every other write answers 422.
 */
export const vaultKind = listedKind({
  contract: VaultKind,
  bucket: Buckets.vaults,
  marks: vaultMarks,
  missing: (id) => fail('vault_not_found', id),
  prefix: VAULT_PREFIX,
  view: (s: VaultState) => s.vault,
  ops: (ctx, states, projection) => vaultOps({ states, projection, keyring: ctx.settings.keyring, keyringConflict: ctx.keyringConflict }),
})
