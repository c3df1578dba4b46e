import type { ApiError } from '../protocol/errors/api-error.js'
import { fail } from '../protocol/errors/fail.js'
import type { BetaGroup } from '../protocol/routes/index.js'

/** Version header values accepted in strict mode: the spec's, and the one the official client sends. */
export const ACCEPTED_VERSIONS = ['2023-06-01', '2026-10-21']

const BETA_FOR: Record<BetaGroup, readonly string[] | undefined> = {
  'managed-agents': ['managed-agents-2026-04-01'],
  skills: ['skills-2025-10-02'],
  // The official client sends the first; its docs say the routes take either.
  memory: ['agent-memory-2026-07-22', 'managed-agents-2026-04-01'],
  // What the official client sends on every dreams route.
  dreams: ['dreaming-2026-04-21'],
  // The official client sends none on files (WIRE §10): asking for one would refuse it.
  files: undefined,
  // Our own routes: no client of the vendor's knows them, so none is asked for.
  admin: undefined,
}

/**
 * Strict mode checks header presence and values only; it is not an authentication system. Returns the
 * first problem, or undefined when the request may proceed.
 */
export function strictProblem(headers: Record<string, string>, beta: BetaGroup, hasBody: boolean): ApiError | undefined {
  const key = headers['x-api-key'] || headers.authorization
  if (!key?.trim()) return fail('api_key_missing')
  const version = headers['vendor-version'] ?? headers['anthropic-version']
  if (!version) return fail('version_header_missing')
  if (!ACCEPTED_VERSIONS.includes(version)) return fail('version_header_unsupported', version, ACCEPTED_VERSIONS)
  const betas = `${headers['vendor-beta'] ?? ''},${headers['anthropic-beta'] ?? ''}`.split(',').map((b) => b.trim())
  const need = BETA_FOR[beta]
  if (need && !need.some((b) => betas.includes(b))) return fail('beta_header_missing', need.join(' or '))
  if (hasBody) {
    const ct = (headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase()
    if (ct !== 'application/json') return fail('content_type_unsupported')
  }
  return undefined
}
