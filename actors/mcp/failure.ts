import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { SseError } from '@modelcontextprotocol/sdk/client/sse.js'
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js'
import { NonPublicAddress } from '../kit/index.js'

/**
 * Why an MCP server could not be used, as WIRE §7.5 names it: `auth` (the server answered 401 or 403:
 * `mcp_authentication_failed_error`) or `unreachable` (no connection, no MCP answer, or none in time:
 * `mcp_connection_failed_error`).
 */
export class McpFailure extends Error {
  constructor(
    readonly kind: 'auth' | 'unreachable',
    readonly server: string,
    message: string,
  ) {
    super(message)
    this.name = 'McpFailure'
  }
}

/** The HTTP status an SDK transport error carries, when it carries one. */
export function httpStatus(err: unknown): number | undefined {
  if (err instanceof StreamableHTTPError || err instanceof SseError) return typeof err.code === 'number' && err.code > 0 ? err.code : undefined
  return undefined
}

/** An error of connecting to or listing `server`, as the failure the session reports. */
export function classify(server: string, err: unknown): McpFailure {
  if (err instanceof McpFailure) return err
  const status = httpStatus(err)
  const detail = describe(err)
  const refused = refusedAddress(err)
  if (refused) {
    return new McpFailure(
      'unreachable',
      server,
      `MCP server ${server} is not reachable from this server: ${refused.message} (TROUPE_MCP_ALLOW_HOSTS lists the names and addresses the operator allows)`,
    )
  }
  if (err instanceof UnauthorizedError || status === 401 || status === 403) {
    return new McpFailure('auth', server, `MCP server ${server} refused the connection (${status ?? 401}): ${detail}`)
  }
  return new McpFailure('unreachable', server, `MCP server ${server} could not be reached: ${detail}`)
}

/** The address refusal (egress.ts) somewhere in `err`'s causes. */
function refusedAddress(err: unknown): NonPublicAddress | undefined {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof NonPublicAddress) return e
  }
  return undefined
}

/** An error's message with its cause (node's fetch says only "fetch failed" and puts ECONNREFUSED in the cause). */
export function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err)
  const cause = (err as { cause?: unknown }).cause
  const inner = cause instanceof Error ? ((cause as { code?: string }).code ?? cause.message) : undefined
  return inner && !err.message.includes(inner) ? `${err.message} (${inner})` : err.message
}
