import { randomBytes } from 'node:crypto'
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'

/** A fresh 32-byte key, base64, as `openssl rand -base64 32` makes one. */
export const newKey = () => randomBytes(32).toString('base64')

/** Writes a keyring file (`{"keys":[…]}`, or any text given) to a new temporary directory; returns its path. */
export function keyringFile(keys: Array<{ id: string; key: string }> | string): string {
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'troupe-keyring-')), 'keyring.json')
  writeFileSync(file, typeof keys === 'string' ? keys : JSON.stringify({ keys }), { mode: 0o600 })
  return file
}

/** Secrets the tests store: distinctive, so a search of logs and stored bytes finds any copy of them. */
export const SECRETS = {
  token: 'SECRET-bearer-token-7f3a9c1e',
  access: 'SECRET-oauth-access-2b8d4e6f',
  refresh: 'SECRET-oauth-refresh-9a1c3e5b',
  client: 'SECRET-client-secret-4d6f8a0c',
  value: 'SECRET-env-value-1e3g5i7k',
  rotated: 'SECRET-rotated-token-0z9y8x7w',
} as const

export const staticBearer = (url = 'https://mcp.example.com/mcp', token: string = SECRETS.token) => ({
  type: 'static_bearer' as const,
  mcp_server_url: url,
  token,
})

export const mcpOAuth = (url = 'https://oauth.example.com/mcp') => ({
  type: 'mcp_oauth' as const,
  mcp_server_url: url,
  access_token: SECRETS.access,
  expires_at: new Date(Date.now() + 3_600_000).toISOString(),
  refresh: {
    client_id: 'client-123',
    refresh_token: SECRETS.refresh,
    token_endpoint: 'https://auth.example.com/token',
    token_endpoint_auth: { type: 'client_secret_post' as const, client_secret: SECRETS.client },
    scope: 'read write',
  },
})

export const envVariable = (name = 'API_KEY') => ({
  type: 'environment_variable' as const,
  secret_name: name,
  secret_value: SECRETS.value,
  networking: { type: 'limited' as const, allowed_hosts: ['api.example.com', '*.example.org', '192.0.2.1'] },
})

/** True when `text` holds any of the test's secrets. */
export const holdsSecret = (text: string) => Object.values(SECRETS).some((s) => text.includes(s))

/** Every message of the vaults bucket's stream as stored (its raw bytes), oldest first. */
export async function storedVaultMessages(natsUrl: string): Promise<Array<{ subject: string; data: Uint8Array }>> {
  const { connect } = await import('@nats-io/transport-node')
  const { jetstreamManager } = await import('@nats-io/jetstream')
  const nc = await connect({ servers: natsUrl })
  try {
    const jsm = await jetstreamManager(nc)
    const info = await jsm.streams.info('KV_troupe_vaults')
    const out: Array<{ subject: string; data: Uint8Array }> = []
    for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
      const m = await jsm.streams.getMessage('KV_troupe_vaults', { seq }).catch(() => undefined)
      if (m) out.push({ subject: m.subject, data: m.data })
    }
    return out
  } finally {
    await nc.close()
  }
}

/** Every file beneath `dir`, read whole (a JetStream store: what is on disk). */
export function filesBeneath(dir: string): Buffer[] {
  const out: Buffer[] = []
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name)
    if (statSync(p).isDirectory()) out.push(...filesBeneath(p))
    else out.push(readFileSync(p))
  }
  return out
}
