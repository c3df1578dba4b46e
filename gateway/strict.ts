import { authentication, invalidRequest, type ApiError } from '../protocol/errors.js'
import type { BetaGroup } from '../protocol/routes/index.js'

/** Version header values accepted in strict mode: the spec's, and the one the official client sends. */
export const ACCEPTED_VERSIONS = ['2023-06-01', '2026-10-21']

const BETA_FOR: Record<BetaGroup, string> = {
  'managed-agents': 'managed-agents-2026-04-01',
  skills: 'skills-2025-10-02',
  memory: 'agent-memory-2026-07-22',
}

/**
 * Strict mode checks header presence and values only; it is not an authentication system. Returns the
 * first problem, or undefined when the request may proceed.
 */
export function strictProblem(headers: Record<string, string>, beta: BetaGroup, hasBody: boolean): ApiError | undefined {
  const key = headers['x-api-key'] || headers['authorization']
  if (!key || !key.trim()) return authentication('An API key is required: send x-api-key or authorization')
  const version = headers['vendor-version'] ?? headers['anthropic-version']
  if (!version) return invalidRequest('A version header is required: send vendor-version or anthropic-version')
  if (!ACCEPTED_VERSIONS.includes(version)) {
    return invalidRequest(`Unsupported version header value ${JSON.stringify(version)}: use one of ${ACCEPTED_VERSIONS.join(', ')}`)
  }
  const betas = `${headers['vendor-beta'] ?? ''},${headers['anthropic-beta'] ?? ''}`.split(',').map((b) => b.trim())
  const need = BETA_FOR[beta]
  if (!betas.includes(need)) return invalidRequest(`This route requires the beta header value ${need} (in vendor-beta or anthropic-beta)`)
  if (hasBody) {
    const ct = (headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase()
    if (ct !== 'application/json') return invalidRequest('content-type must be application/json on requests with a JSON body')
  }
  return undefined
}
