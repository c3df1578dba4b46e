import type { KV } from '@nats-io/kv'
import { ApiKeyKind } from '../../protocol/ops/api-key.js'
import type { ApiKey } from '../../protocol/schemas/api-key.js'
import { Buckets } from '../../protocol/subjects.js'
import { type ActorKindDef, implement, openBucket, Projection, type StartupLog, type Storage } from '../kit/index.js'
import type { Kvm } from '@nats-io/kv'
import { ApiKeys } from './keys.js'
import { KEY_PREFIX, type StoredKey } from './records.js'
import { loadKeySecret } from './secret.js'

export { KeyCheck, MEMO_ENTRIES } from './check.js'
export { ApiKeys, ensureFileKey, readAdminKeyFile } from './keys.js'
export { KEY_PREFIX_TEXT } from './records.js'

/** The keys' bucket and the cluster's HMAC key of them, opened (and made, the first time) by a host or the CLI. */
export async function openApiKeys(kvm: Kvm, storage: Storage, log?: StartupLog): Promise<{ kv: KV; clusterKey: Uint8Array }> {
  const kv = await openBucket(kvm, storage, Buckets.apiKeys)
  return { kv, clusterKey: await loadKeySecret(kv, log) }
}

/** The keys' operations with their list projection started; `close` stops its watch. */
export async function apiKeysOn(kv: KV, clusterKey: Uint8Array, log?: StartupLog): Promise<{ keys: ApiKeys; close(): void }> {
  const projection = new Projection<ApiKey, StoredKey>(kv, KEY_PREFIX, (s) => s.key)
  await projection.start(log)
  return { keys: new ApiKeys(kv, clusterKey, projection), close: () => projection.stop() }
}

/** API keys (the admin routes): any host serves any key. */
export const apiKeyKind: ActorKindDef = {
  contract: ApiKeyKind,
  async start(ctx) {
    const { kv, clusterKey } = await openApiKeys(ctx.kvm, ctx.storage, ctx.log)
    const { keys, close } = await apiKeysOn(kv, clusterKey, ctx.log)
    return {
      ops: implement(ApiKeyKind, {
        create: (req) => keys.create(req.body),
        list: (req) => keys.list(req.query),
        get: (req) => keys.get(req.id),
        update: (req) => keys.update(req.id, req.body),
        rotate: (req) => keys.rotate(req.id),
        revoke: (req) => keys.revoke(req.id),
      }),
      close: async () => close(),
    }
  },
}
