import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { describe, type Fetch, type HttpAnswer, readAnswer } from './http-answer.js'

/** How long the server may take to answer each step (twice in a validation, beside one refresh: inside the gateway's 15 s). */
export const PROBE_TIMEOUT_MS = 3_500

/**
 * A probe's outcome: the server took the token through `initialize` and `tools/list`; or the step that failed
 * (`method`), with the server's HTTP answer to it when it gave one (`answer`, undefined after a timeout or a refused
 * connection: `error`).
 */
export type ProbeOutcome = { ok: true } | { ok: false; method: string; answer?: HttpAnswer; error: string }

/**
 * Asks an MCP server whether it takes `token`, as a session's connection would use it (`@modelcontextprotocol/sdk`,
 * streamable HTTP, `Authorization: Bearer`): the `initialize` handshake, then `tools/list`; the MCP session it opened is
 * ended after (`DELETE`). Redirects are not followed. A 401 or 403 answer is the server refusing the token; any other
 * failure says nothing of it (a server offering only the older SSE transport answers the POST 404 or 405).
 */
export async function probe(fetch: Fetch, url: string, token: string): Promise<ProbeOutcome> {
  let method = 'initialize'
  let answer: HttpAnswer | undefined
  // The SDK keeps an error's status and drops its body: the answer to a failing POST is read here for the report.
  const fetchCapturing = async (input: string | URL, init?: RequestInit): Promise<Response> => {
    const res = await fetch(input, { ...init, redirect: 'manual' })
    if (res.ok || init?.method !== 'POST') return res
    answer = await readAnswer(res)
    return new Response(answer.text, { status: res.status, headers: res.headers })
  }
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } }, fetch: fetchCapturing })
  const client = new Client({ name: 'troupe-credential-validation', version: '0.1.0' }, { capabilities: {} })
  client.onerror = () => undefined
  try {
    await client.connect(transport, { timeout: PROBE_TIMEOUT_MS })
    method = 'tools/list'
    await client.listTools(undefined, { timeout: PROBE_TIMEOUT_MS })
    return { ok: true }
  } catch (err) {
    return { ok: false, method, ...(answer ? { answer } : {}), error: describe(err) }
  } finally {
    let timer: NodeJS.Timeout | undefined
    await Promise.race([transport.terminateSession().catch(() => undefined), new Promise((r) => (timer = setTimeout(r, 1000)))])
    clearTimeout(timer)
    await client.close().catch(() => undefined)
  }
}
