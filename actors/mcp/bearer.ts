import type { McpAuth } from './connection.js'

/**
 * Where a session's bearer tokens come from (the wiring gives the vaults': actors/vault/secrets.ts): the token for MCP
 * server `url`, and `basis`, what names that token; with `stale`, the basis of one the server refused, to be renewed.
 * Undefined: no credential, connect without one.
 */
export type BearerSource = (url: string, stale?: string) => Promise<{ token: string; basis: string } | undefined>

/**
 * A session's `McpAuth` over its bearer source: `Authorization: Bearer <token>`, and after a 401 the source asked to
 * renew the very token that was refused (not one another connection renewed meanwhile).
 */
export function bearerAuth(source: BearerSource): McpAuth {
  const given = new Map<string, string>()
  return {
    async headers(url, refused): Promise<Record<string, string>> {
      const b = await source(url, refused ? given.get(url) : undefined)
      if (!b) {
        given.delete(url)
        return {}
      }
      given.set(url, b.basis)
      return { authorization: `Bearer ${b.token}` }
    },
  }
}
