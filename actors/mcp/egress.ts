import { isIP, type LookupFunction } from 'node:net'
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js'
import { Agent, fetch as undiciFetch } from 'undici'
import { type AddressExceptions, NO_EXCEPTIONS, NonPublicAddress, publicAddress, type Resolver, refusal, systemResolver } from '../kit/index.js'

/** Where a host's MCP connections may go (issue 43 point 4). */
export interface McpEgress {
  /**
   * `TROUPE_MCP_ALLOW_HOSTS`: host names, addresses and CIDR ranges an MCP server may be at although they are not
   * public (loopback, a private network). Default none: only public unicast addresses.
   */
  except: AddressExceptions
  /** How host names resolve, at connect time. Default the system's resolver. */
  resolve?: Resolver
}

export const PUBLIC_ONLY: McpEgress = { except: NO_EXCEPTIONS }

/**
 * The most bytes one response of an MCP server may carry (a `tools/list` page, a call's result, or everything a
 * standalone event stream sends over its life): past it the body errors and the request fails as the server being
 * unreachable, so a hostile server cannot fill the host's memory. 16 MiB, far above what a session keeps of a result
 * (`MAX_RESULT_CHARS`).
 */
export const MAX_RESPONSE_BYTES = 16 * 1024 * 1024

/**
 * The `fetch` an MCP transport makes its requests with: each new connection goes to the address its host name resolves
 * to now, once every address it resolves to is public or excepted by the operator, and to exactly that address (a name
 * that answers differently the next time cannot move a checked connection to the loopback); an address written in
 * the URL is checked the same. The webhooks' rules (kit/public-address.ts), the same classes refused.
 */
export function egressFetch(egress: McpEgress): FetchLike {
  const resolve = egress.resolve ?? systemResolver
  const lookup: LookupFunction = (hostname, options, cb) => {
    publicAddress(hostname, resolve, egress.except).then(
      ({ address, family }) => {
        if ((options as { all?: boolean }).all) (cb as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [{ address, family }])
        else cb(null, address, family)
      },
      (err: Error) => cb(err as NodeJS.ErrnoException, '', 0),
    )
  }
  const dispatcher = new Agent({ connect: { lookup } })
  return async (url, init) => {
    const u = new URL(url)
    const host = u.hostname.replace(/^\[(.*)\]$/, '$1')
    // A literal address is connected to without a lookup: checked here.
    if (isIP(host)) {
      const why = refusal(host, egress.except)
      if (why) throw new TypeError('fetch failed', { cause: new NonPublicAddress(host, host, why) })
    }
    return (await undiciFetch(url, { ...(init as object), dispatcher })) as unknown as Response
  }
}

/**
 * `res` with a body that errors once more than `max` bytes have come, telling `over` first: the SDK reads an event
 * stream's errors as a disconnection and waits for an answer that will not come, so the connection must hear of it
 * itself and end the requests.
 */
export function capBody(res: Response, max: number, over: (err: Error) => void): Response {
  if (!res.body) return res
  let seen = 0
  const limit = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      seen += chunk.byteLength
      if (seen <= max) return controller.enqueue(chunk)
      const err = new Error(`its response is over ${max} bytes`)
      over(err)
      controller.error(err)
    },
  })
  return new Response(res.body.pipeThrough(limit), { status: res.status, statusText: res.statusText, headers: res.headers })
}
