import type { HostSettings } from '../actors/kit/index.js'
import type { HostAbilities, HostBeat, KindName } from '../protocol/subjects.js'

/** What a host with these settings can do, as its heartbeat tells the others. */
export function abilitiesOf(settings: HostSettings): HostAbilities {
  const { keyring } = settings
  return {
    model: !!(settings.modelBaseUrl || settings.anthropicApiKey),
    ...(keyring ? { keyring: { keys: keyring.fingerprints, sealing: keyring.current } } : {}),
    sandbox: settings.sandboxPlacement === 'remote' ? 'remote' : (settings.sandbox?.kind ?? 'none'),
  }
}

/**
 * What each kind needs of the host that owns its partitions; a kind not named runs on any host. Sessions run turns
 * (a model endpoint); vaults and webhooks seal secrets (the operator keyring).
 */
const NEEDS: Partial<Record<KindName, { can: (a: HostAbilities) => boolean; lacks: string }>> = {
  session: { can: (a) => a.model, lacks: 'no model endpoint (TROUPE_MODEL_BASE_URL or ANTHROPIC_API_KEY)' },
  vault: { can: (a) => !!a.keyring, lacks: 'no operator keyring (TROUPE_VAULT_KEYRING_FILE)' },
  webhook: { can: (a) => !!a.keyring, lacks: 'no operator keyring (TROUPE_VAULT_KEYRING_FILE)' },
}

/** Whether a host can own `kind`'s partitions; a beat without abilities (an earlier version's) can own any. */
export function canOwn(kind: KindName, can: HostAbilities | undefined): boolean {
  const need = NEEDS[kind]
  return !need || !can || need.can(can)
}

/**
 * The hosts that own `kind`'s partitions: those of `hosts` that can, or all of them when none can (a kind is always
 * served: its requests then say what is missing, as a session turn ending in an error that names the model setting).
 */
export function ownersFor(kind: KindName, hosts: readonly string[], abilities: (host: string) => HostAbilities | undefined): string[] {
  const able = hosts.filter((h) => canOwn(kind, abilities(h)))
  return able.length ? able : [...hosts]
}

/**
 * The kinds a host with these abilities leaves to hosts that can own them, each with why (for its banner and
 * `troupe status`): `session: no model endpoint (…)`. Empty when it can own every kind.
 */
export function kindsLeft(can: HostAbilities): string[] {
  return Object.entries(NEEDS)
    .filter(([, need]) => !need!.can(can))
    .map(([kind, need]) => `${kind}: ${need!.lacks}`)
}

/**
 * Whether the keyrings of these hosts can work together, and if not, why: the same key id holding different keys, or
 * a host sealing new secrets with a key another host lacks (it could not open them). Hosts without a keyring are not
 * a conflict (they own no vault or webhook partition). Undefined when they agree.
 */
export function keyringConflict(beats: ReadonlyArray<readonly [string, Pick<HostBeat, 'can'>]>): string | undefined {
  const rings = beats.flatMap(([host, b]) => (b.can?.keyring ? [[host, b.can.keyring] as const] : []))
  for (const [a, ra] of rings) {
    for (const [b, rb] of rings) {
      if (a >= b) continue
      for (const [id, print] of Object.entries(ra.keys)) {
        const other = rb.keys[id]
        if (other !== undefined && other !== print) return `key ${id} differs between hosts ${a} (${print}) and ${b} (${other})`
      }
      if (!(ra.sealing in rb.keys)) return `host ${a} seals new secrets with key ${ra.sealing}, which host ${b} lacks`
      if (!(rb.sealing in ra.keys)) return `host ${b} seals new secrets with key ${rb.sealing}, which host ${a} lacks`
    }
  }
  return undefined
}
