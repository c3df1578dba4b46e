import { fail } from '../../protocol/errors/fail.js'
import { idFromKey, newId } from '../../protocol/ids.js'
import type { VaultKind } from '../../protocol/ops/vault.js'
import { patchMetadata } from '../../protocol/schemas/common.js'
import type { Credential, Vault } from '../../protocol/schemas/vault.js'
import { fingerprint } from '../../protocol/hash.js'
import { now } from '../../protocol/time.js'
import type { Logger } from 'pino'
import { type ActorClient, type DurableState, type Handlers, keyedCreate, type Keyring, listOf, type Outbox, pageOf, type Projection } from '../kit/index.js'
import { archivedCredential, createdCredential, identityOf, updatedCredential } from './credentials.js'
import type { Fetch } from './http-answer.js'
import { resolveCredential } from './resolve.js'
import { MAX_ACTIVE_CREDENTIALS, MAX_CREDENTIALS, type StoredCredential, type VaultState } from './state.js'
import { storeRefreshed, TokenRefresher } from './tokens.js'
import { validateCredential } from './validate.js'

export interface VaultDeps {
  states: DurableState<VaultState, typeof VaultKind>
  projection: Projection<Vault, VaultState>
  /** The operator keyring; absent, every write but a delete answers 422. */
  keyring: Keyring | undefined
  /** Why the cluster's keyrings do not work together (HostContext.keyringConflict); then no write seals anything. */
  keyringConflict: () => string | undefined
  /** Where `vault_credential.refresh_failed` goes (webhooks). */
  outbox: Outbox
  log: Logger
  /** How the token endpoints and the validations' probes are reached (http-answer.ts `Fetch`). */
  fetch: Fetch
  /** The actors' client: a refresh stores its tokens through the vault's owner. */
  client: ActorClient
}

export function vaultOps({ states, projection, keyring, keyringConflict, outbox, log, fetch, client }: VaultDeps): Handlers<typeof VaultKind> {
  /** The keyring, for a write: without one, or while hosts' keyrings disagree, nothing is stored. */
  const sealer = (): Keyring => {
    if (!keyring) throw fail('keyring_unavailable')
    const conflict = keyringConflict()
    if (conflict) throw fail('keyring_mismatch', conflict)
    return keyring
  }
  const writable = (s: VaultState) => {
    if (s.vault.archived_at) throw fail('vault_read_only', s.vault.id)
  }
  const find = (s: VaultState, id: string): StoredCredential => {
    const c = s.credentials.find((x) => x.credential.id === id)
    if (!c) throw fail('credential_not_found', id, s.vault.id)
    return c
  }
  const replace = (s: VaultState, next: StoredCredential): VaultState => ({
    ...s,
    credentials: s.credentials.map((c) => (c.credential.id === next.credential.id ? next : c)),
  })

  const ops = states.ops({
    get: { shared: (s) => s.vault },

    update(s, { body: b }) {
      sealer()
      writable(s)
      const v = s.vault
      const next: Vault = {
        ...v,
        display_name: b.display_name ?? v.display_name,
        metadata: b.metadata == null ? v.metadata : patchMetadata(v.metadata, b.metadata),
      }
      if (JSON.stringify(next) === JSON.stringify(v)) return { reply: v }
      const vault = { ...next, updated_at: now() }
      return { state: { ...s, vault }, reply: vault }
    },

    archive(s) {
      sealer()
      if (s.vault.archived_at) return { reply: s.vault }
      const t = now()
      const vault = { ...s.vault, archived_at: t, updated_at: t }
      // Its credentials go with it, their secrets purged: an archived vault is never used again.
      return { state: { ...s, vault, credentials: s.credentials.map((c) => archivedCredential(c, t)) }, reply: vault }
    },

    delete(s) {
      return { delete: true, reply: { id: s.vault.id, type: 'vault_deleted' as const } }
    },

    'credentials.create'(s, { body: b, key }) {
      const ring = sealer()
      // A retry of a create with the same Idempotency-Key answers with what the first attempt stored.
      const id = key === undefined ? newId('vcrd') : idFromKey('vcrd', 'vaults.credentials.create', `${s.vault.id}\n${key}`)
      const createdBy = key === undefined ? undefined : fingerprint(b)
      const again = s.credentials.find((c) => c.credential.id === id)
      if (again) {
        if (again.created_by !== createdBy) throw fail('idempotency_key_reused')
        return { reply: again.credential }
      }
      writable(s)
      const active = s.credentials.filter((c) => !c.credential.archived_at)
      if (active.length >= MAX_ACTIVE_CREDENTIALS) throw fail('vault_credentials_full', s.vault.id, MAX_ACTIVE_CREDENTIALS, 'active credentials')
      if (s.credentials.length >= MAX_CREDENTIALS) throw fail('vault_credentials_full', s.vault.id, MAX_CREDENTIALS, 'credentials (archived ones included)')
      const c = createdCredential(ring, id, s.vault.id, b, now(), createdBy)
      const mine = identityOf(c.credential.auth)
      const clash = active.find((x) => identityOf(x.credential.auth).key === mine.key)
      if (clash) throw fail('credential_duplicate', mine.field, mine.value, s.vault.id, clash.credential.id)
      return { state: { ...s, credentials: [...s.credentials, c] }, reply: c.credential }
    },

    'credentials.list': {
      shared: (s, { query: q }) => {
        const includeArchived = q.include_archived ?? false
        const list = listOf(s.credentials.map((c) => c.credential))
        return pageOf<Credential>(
          list,
          `vaults/${s.vault.id}/credentials`,
          { include_archived: includeArchived },
          q.page,
          q.limit ?? 20,
          (c) => includeArchived || !c.archived_at,
        )
      },
    },

    'credentials.get': { shared: (s, { sub }) => find(s, sub!).credential },

    'credentials.update'(s, { sub, body: b }) {
      const ring = sealer()
      writable(s)
      const c = find(s, sub!)
      if (c.credential.archived_at) throw fail('credential_archived', c.credential.id)
      const next = updatedCredential(ring, c, b, now())
      if (next === c) return { reply: c.credential }
      return { state: replace(s, next), reply: next.credential }
    },

    'credentials.archive'(s, { sub }) {
      sealer()
      const c = find(s, sub!)
      if (c.credential.archived_at) return { reply: c.credential }
      const next = archivedCredential(c, now())
      return { state: replace(s, next), reply: next.credential }
    },

    'credentials.store_refreshed': (s, { body }) => storeRefreshed(s, body),

    'credentials.delete'(s, { sub }) {
      const c = find(s, sub!)
      const state = { ...s, credentials: s.credentials.filter((x) => x !== c) }
      return { state, reply: { id: c.credential.id, type: 'vault_credential_deleted' as const } }
    },
  })

  const tokens = new TokenRefresher({ states, sealer, outbox, log, fetch, client })
  /** The vault's state, for an op that works beside its mailbox (a probe, a refresh: network calls of bounded time). */
  const stateOf = async (id: string): Promise<VaultState> => {
    const s = await states.read(id)
    if (!s) throw fail('vault_not_found', id)
    return s
  }

  return {
    // Placed on any host: the id is new, and the create of its state is the fence against a second one.
    async create(req) {
      sealer()
      const b = req.body
      return keyedCreate('vlt', 'vaults.create', req, {
        stored: (id) => states.read(id),
        answer: (s) => s.vault,
        async make(id, createdBy) {
          const t = now()
          const vault: Vault = { id, type: 'vault', display_name: b.display_name, metadata: b.metadata ?? {}, created_at: t, updated_at: t, archived_at: null }
          const state: VaultState = { vault, ...(createdBy ? { created_by: createdBy } : {}), credentials: [] }
          return (await states.create(id, state)) && vault
        },
      })
    },

    async list({ query: q }) {
      await projection.fresh()
      const includeArchived = q.include_archived ?? false
      return pageOf(projection, 'vaults', { include_archived: includeArchived }, q.page, q.limit ?? 20, (v) => includeArchived || v.archived_at === null)
    },

    ...ops,

    async 'credentials.validate'({ id, sub }) {
      const s = await stateOf(id!)
      return validateCredential(find(s, sub!), s.vault.id, sealer, tokens, fetch)
    },

    async 'credentials.resolve'({ id, body: b }) {
      sealer()
      return resolveCredential(await stateOf(id!), b.mcp_server_url, b.stale, tokens)
    },
  }
}
