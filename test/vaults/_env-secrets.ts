import type Anthropic from '@anthropic-ai/sdk'

export { receivers, type Seen } from '../helpers/secret-receivers.js'

export const WINS = 'SECRET-env-first-vault-6h2k9m'
export const LOSES = 'SECRET-env-second-vault-3p7r1t'
export const OTHER = 'SECRET-env-other-unrestricted-8w4y'
export const SHADOWED = 'SECRET-env-archived-5q8s2u'
export const SHADOW = 'SECRET-env-shadow-second-4v6x0z'
export const ROTATED = 'SECRET-env-rotated-9j1l3n'
const ALL = [WINS, LOSES, OTHER, SHADOWED, SHADOW, ROTATED]
/** The test's secrets found in `text`. */
export const holds = (text: string) => ALL.filter((s) => text.includes(s))

/**
 * Two vaults: the first holds API_KEY (WINS, localhost only, header and body) and an archived SHADOW_KEY; the second
 * API_KEY (LOSES: the first vault's wins), SHADOW_KEY (SHADOW, localhost, body only: the first vault's is archived)
 * and OTHER_KEY (OTHER, any host, header only). Their ids, in the session's order.
 */
export async function vaults(client: Anthropic): Promise<string[]> {
  const creds = client.beta.vaults.credentials
  const env = (secret_name: string, secret_value: string, networking: object, injection_location?: object) =>
    ({ type: 'environment_variable', secret_name, secret_value, networking, ...(injection_location ? { injection_location } : {}) }) as any
  const first = await client.beta.vaults.create({ display_name: 'first' })
  const second = await client.beta.vaults.create({ display_name: 'second' })
  await creds.create(first.id, { auth: env('API_KEY', WINS, { type: 'limited', allowed_hosts: ['localhost'] }) })
  const archived = await creds.create(first.id, { auth: env('SHADOW_KEY', SHADOWED, { type: 'unrestricted' }) })
  await creds.archive(archived.id, { vault_id: first.id })
  await creds.create(second.id, { auth: env('API_KEY', LOSES, { type: 'unrestricted' }) })
  await creds.create(second.id, { auth: env('SHADOW_KEY', SHADOW, { type: 'limited', allowed_hosts: ['localhost'] }, { header: false }) })
  await creds.create(second.id, { auth: env('OTHER_KEY', OTHER, { type: 'unrestricted' }, { body: false }) })
  return [first.id, second.id]
}

/** curl through the sandbox's proxy even for names NO_PROXY keeps direct (the receivers are on this host). */
export const CURL = `curl -sS -m 10 -x "$http_proxy" --noproxy ''`
