import type { KV } from '@nats-io/kv'
import { type Keyring, RecordStore } from '../kit/index.js'
import { secretAad, VAULT_PREFIX, type VaultState } from './state.js'

/**
 * A session's `environment_variable` credential, opened for its sandbox's egress proxy (issue 43 point 3): the
 * sandbox's processes see `name` holding `placeholder`, and the proxy puts `value` in place of it in the headers and/or
 * body of requests to `hosts`. The value is opened here, on the session's host (the one with the keyring), and kept in
 * memory by whoever holds this; it is never stored, logged or put in an event.
 */
export interface EnvSecret {
  credentialId: string
  vaultId: string
  name: string
  /** `troupe-secret-<32 hex digits>`: derived from the keyring, the session and the name, so the same on every host. */
  placeholder: string
  value: string
  header: boolean
  body: boolean
  /** The names and `*.` wildcards it goes to; undefined: any host the sandbox may reach (`unrestricted`). */
  hosts: readonly string[] | undefined
}

/** What a session's vaults give its sandbox: the secrets, and what could not be used (said to the client, no secret in it). */
export interface EnvSecrets {
  secrets: EnvSecret[]
  problems: string[]
}

/** The placeholder of the variable `name` in session `session`'s sandbox. */
export function secretPlaceholder(keyring: Keyring, session: string, name: string): string {
  return `troupe-secret-${keyring.derive('env-secret-placeholder', `${session}\0${name}`).slice(0, 32)}`
}

/**
 * Reads the session's vaults' records (`troupe_vaults`, read directly: the secrets never cross the actor wire) and
 * opens their `environment_variable` credentials: vaults in the session's frozen order, the first active credential
 * of a `secret_name` winning (SPEC sessions, create rule on `vault_ids`); archived credentials and vaults, and deleted
 * vaults, skipped. Without a keyring nothing opens, and that is the one problem said.
 *
 * @example
 * const source = new EnvSecretSource(await openBucket(kvm, storage, Buckets.vaults), keyring)
 * const { secrets, problems } = await source.forSession('sesn_…', ['vlt_a', 'vlt_b'])
 */
export class EnvSecretSource {
  private readonly records: RecordStore<VaultState>

  constructor(
    kv: KV,
    private readonly keyring: Keyring | undefined,
  ) {
    this.records = new RecordStore<VaultState>(kv)
  }

  async forSession(session: string, vaultIds: readonly string[]): Promise<EnvSecrets> {
    const out: EnvSecrets = { secrets: [], problems: [] }
    if (!vaultIds.length) return out
    const states = await Promise.all(vaultIds.map((id) => this.records.get(`${VAULT_PREFIX}${id}`)))
    const keyring = this.keyring
    const taken = new Set<string>()
    for (const [i, got] of states.entries()) {
      const state = got?.value
      if (!state || state.vault.archived_at) continue
      for (const c of state.credentials) {
        const { credential } = c
        const auth = credential.auth
        if (auth.type !== 'environment_variable' || credential.archived_at || taken.has(auth.secret_name)) continue
        taken.add(auth.secret_name)
        const sealed = c.secrets.secret_value
        if (!keyring) {
          out.problems.push(
            `The environment variable ${auth.secret_name} (credential ${credential.id} of vault ${vaultIds[i]}) is not set: this host has no keyring to open it (TROUPE_VAULT_KEYRING_FILE).`,
          )
          continue
        }
        let value: string
        try {
          if (!sealed) throw new Error('no secret stored')
          value = keyring.open(sealed, secretAad(credential.id, 'secret_value'))
        } catch (err) {
          out.problems.push(
            `The environment variable ${auth.secret_name} (credential ${credential.id} of vault ${vaultIds[i]}) is not set: its secret does not open here (${(err as Error).message}).`,
          )
          continue
        }
        out.secrets.push({
          credentialId: credential.id,
          vaultId: state.vault.id,
          name: auth.secret_name,
          placeholder: secretPlaceholder(keyring, session, auth.secret_name),
          value,
          header: auth.injection_location.header,
          body: auth.injection_location.body,
          hosts: auth.networking.type === 'limited' ? [...auth.networking.allowed_hosts] : undefined,
        })
      }
    }
    return out
  }
}
