import type { ValidationHttpResponse } from '../../protocol/schemas/vault.js'

/** At most this many characters of an answer's body are shown (`body_truncated` says when it was cut). */
export const SHOWN_BODY_CHARS = 4096
/** At most this many bytes of an answer are read: a token endpoint's JSON is small; a hostile server's is not read on. */
export const READ_BODY_BYTES = 64 * 1024

/**
 * How a credential's requests go out (the token endpoint's, a validation's probe): the MCP connections' `egressFetch`,
 * so they reach only public addresses unless `TROUPE_MCP_ALLOW_HOSTS` lists them (actors/mcp/egress.ts).
 */
export type Fetch = (url: string | URL, init?: RequestInit) => Promise<Response>

/** An answer read: its status, content type and the start of its body (`READ_BODY_BYTES`). */
export interface HttpAnswer {
  status: number
  contentType: string
  text: string
  /** More bytes followed what was read. */
  cut: boolean
}

/**
 * Sends `init` to `url` within `timeoutMs`, redirects not followed (a credential is sent only where it is meant to go),
 * and reads the start of the answer. Throws when nothing answered in time (the caller's `connect_error`).
 */
export async function send(fetch: Fetch, url: string, init: RequestInit, timeoutMs: number): Promise<HttpAnswer> {
  const res = await fetch(url, { ...init, redirect: 'manual', signal: AbortSignal.timeout(timeoutMs) })
  return readAnswer(res)
}

/** The start of an answer (`READ_BODY_BYTES`; the rest is not read). */
export async function readAnswer(res: Response): Promise<HttpAnswer> {
  const chunks: Uint8Array[] = []
  let size = 0
  let cut = false
  const reader = res.body?.getReader()
  try {
    while (reader) {
      const { done, value } = await reader.read()
      if (done) break
      chunks.push(value)
      size += value.length
      if (size >= READ_BODY_BYTES) {
        cut = true
        break
      }
    }
  } catch (err) {
    // A body that stops coming (an event stream left open) is what came of it; only nothing at all is a failure.
    if (!size) throw err
    cut = true
  } finally {
    void reader?.cancel().catch(() => undefined)
  }
  const text = new TextDecoder().decode(Buffer.concat(chunks).subarray(0, READ_BODY_BYTES))
  return { status: res.status, contentType: res.headers.get('content-type') ?? '', text, cut }
}

/** Every occurrence of a secret in `text` replaced by `[redacted]` (a server echoing a token back shows no token). */
export function redact(text: string, secrets: ReadonlyArray<string | undefined>): string {
  let out = text
  for (const s of secrets) if (s && s.length >= 4) out = out.split(s).join('[redacted]')
  return out
}

/** The answer as a validation shows it: its body redacted of `secrets`, cut at `SHOWN_BODY_CHARS`. */
export function shown(a: HttpAnswer, secrets: ReadonlyArray<string | undefined>): ValidationHttpResponse {
  const body = redact(a.text, secrets)
  return {
    status_code: a.status,
    content_type: a.contentType,
    body: body.slice(0, SHOWN_BODY_CHARS),
    body_truncated: a.cut || body.length > SHOWN_BODY_CHARS,
  }
}

/** An error's message with its cause's code (node's fetch says "fetch failed" and puts ECONNREFUSED in the cause). */
export function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err)
  if (err.name === 'TimeoutError') return 'no answer in time'
  const cause = (err as { cause?: unknown }).cause
  const inner = cause instanceof Error ? ((cause as { code?: string }).code ?? cause.message) : undefined
  return inner && !err.message.includes(inner) ? `${err.message} (${inner})` : err.message
}
