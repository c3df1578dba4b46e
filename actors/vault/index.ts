import { fail } from '../../protocol/errors/fail.js'
import { VaultKind } from '../../protocol/ops/vault.js'
import type { Vault } from '../../protocol/schemas/vault.js'
import { Buckets } from '../../protocol/subjects.js'
import { durableState } from '../kit/durable-state.js'
import { implement } from '../kit/ops.js'
import { Projection } from '../kit/projection.js'
import type { ActorKindDef } from '../kit/types.js'
import { vaultOps } from './behaviour.js'
import { VAULT_PREFIX, type VaultState } from './state.js'

/**
 * Vaults. Each vault is a durable-state actor (kit/durable-state.ts) on the host owning its partition, its credentials
 * inside its state with their secrets sealed by the operator keyring (`HostSettings.keyring`): its writes one at a
 * time, its reads from memory. Creates and lists run on any host (the create of its state is the fence; lists come from
 * a projection). Without a keyring, reads and deletes work and every other write answers 422.
 */
export const vaultKind: ActorKindDef = {
  contract: VaultKind,
  async start(ctx) {
    const states = await durableState<VaultState, typeof VaultKind>(ctx, {
      contract: VaultKind,
      bucket: Buckets.vaults,
      missing: (id) => fail('vault_not_found', id),
    })
    const projection = new Projection<Vault, VaultState>(states.kv, VAULT_PREFIX, (s) => s.vault)
    await projection.start()
    const ops = vaultOps({ states, projection, keyring: ctx.settings.keyring })
    return states.runtime(implement(VaultKind, ops), () => projection.stop())
  },
}
