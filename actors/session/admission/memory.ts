import { fail, inField } from '../../../protocol/errors/fail.js'
import { memoryStoreSlug } from '../../../protocol/memory-rules.js'
import { MemoryStoreKind } from '../../../protocol/ops/memory.js'
import type { Environment } from '../../../protocol/schemas/environment.js'
import type { MemoryStore } from '../../../protocol/schemas/memory.js'
import {
  isMemoryStoreParams,
  MEMORY_ROOT,
  type MemoryStoreResource,
  memoryResources,
  type ResourceParamsT,
  type SessionResource,
} from '../../../protocol/schemas/resource.js'
import type { HostContext } from '../../kit/index.js'
import type { SandboxTraits } from './admission.js'

/**
 * A session's memory stores (issue 42 point 4; SPEC session resource inputs, WIRE §9 MemoryStoreResource): attached at
 * creation only, each on its store's owner (`attach`: 404 missing, 400 archived, both naming `resources[i]`), which
 * then refuses the store's delete while the session lives; detached when the session is deleted. Mounted at
 * /mnt/memory/<slug> by the session's sandbox (actors/workdir/memory/).
 */

/**
 * SPEC session create rule 6 (resources need the sandbox capability): the stores are mounted by binding directories
 * into the isolated sandbox. A self-hosted environment's tools run on the client; the local backend runs them on the
 * host, where nothing is mounted and nothing would keep a `read_only` mount from being written.
 */
export function checkMemoryMounted(params: readonly ResourceParamsT[], env: Environment, backend: SandboxTraits): void {
  const at = params.findIndex(isMemoryStoreParams)
  if (at < 0) return
  if (env.config.type === 'self_hosted') throw fail('memory_stores_not_mounted', at, `environment ${env.id} is self_hosted (its tools run on the client)`)
  if (backend.kind !== 'isolated') {
    throw fail(
      'memory_stores_not_mounted',
      at,
      "this server's sessions run tools on the local backend (TROUPE_SANDBOX=local, or bubblewrap could not start here)",
    )
  }
}

/**
 * Attaches each memory store of a new session's `resources` (in order) and makes its resource: the store's name and
 * description as they are now, its mount path from its name (`/mnt/memory/<slug>`; a slug already taken by an earlier
 * store of the session gets `-2`, `-3`, …), `access` `read_write` unless asked otherwise. An attach that fails
 * detaches the ones made before it.
 */
export async function attachMemoryStores(
  ctx: Pick<HostContext, 'client' | 'log'>,
  sessionId: string,
  params: readonly ResourceParamsT[],
  rid: string,
): Promise<Map<number, MemoryStoreResource>> {
  const made = new Map<number, MemoryStoreResource>()
  const slugs = new Set<string>()
  for (const [i, p] of params.entries()) {
    if (!isMemoryStoreParams(p)) continue
    let store: MemoryStore
    try {
      store = await ctx.client
        .call(MemoryStoreKind.ops.attach, { id: p.memory_store_id, body: { session_id: sessionId }, rid })
        .catch(inField(`resources[${i}].memory_store_id`, { every4xx: true }))
    } catch (err) {
      await detachMemoryStores(ctx, sessionId, [...made.values()], rid)
      throw err
    }
    const base = memoryStoreSlug(store.name)
    let slug = base
    for (let n = 2; slugs.has(slug); n++) slug = `${base}-${n}`
    slugs.add(slug)
    made.set(i, {
      type: 'memory_store',
      memory_store_id: store.id,
      access: p.access ?? 'read_write',
      instructions: p.instructions ?? null,
      name: store.name,
      description: store.description,
      mount_path: `${MEMORY_ROOT}/${slug}`,
    })
  }
  return made
}

/** Lets the session's stores go (its delete, or a create that failed), as far as it can: a failure is logged. */
export async function detachMemoryStores(
  ctx: Pick<HostContext, 'client' | 'log'>,
  sessionId: string,
  resources: readonly SessionResource[],
  rid: string,
): Promise<void> {
  for (const r of memoryResources(resources)) {
    await ctx.client.call(MemoryStoreKind.ops.detach, { id: r.memory_store_id, body: { session_id: sessionId }, rid }).catch((err: unknown) => {
      if ((err as { status?: number }).status !== 404)
        ctx.log.warn({ session: sessionId, store: r.memory_store_id, err, rid }, 'a memory store was not detached; its delete stays refused')
    })
  }
}
