import type { IncomingHttpHeaders } from 'node:http'
import { type EgressPolicy, policyAllows } from './policy.js'

/**
 * A secret the sandbox uses without holding it (a vault's `environment_variable` credential): its processes see the
 * variable `name` holding `placeholder`, and the sandbox's egress proxy puts `value` in place of the placeholder in
 * the headers and/or the body of requests to `hosts`, and nowhere else. The value lives in the proxy's memory only.
 */
export interface EgressSecret {
  /** The environment variable the sandbox's processes see. */
  name: string
  /** What the variable holds inside: a token nobody could guess, the same for the whole session. */
  placeholder: string
  value: string
  /** Replaced in request headers. */
  header: boolean
  /** Replaced in request bodies (not when the body is compressed: the placeholder goes unchanged then). */
  body: boolean
  /** Where it is put in: `unrestricted` any host the sandbox may reach; `limited` only those names and `*.` wildcards. */
  hosts: EgressPolicy
}

/** Whether some secret is put into requests to `host` (canonical): the proxy must read them, HTTPS included. */
export function secretsReach(secrets: readonly EgressSecret[], host: string): boolean {
  return secrets.some((s) => policyAllows(s.hosts, host))
}

/** What a header value may hold (RFC 9110 field-value characters): a secret with a line break is never put in one. */
const HEADER_SAFE = /^[\t\x20-\x7e\x80-\xff]*$/

/** Puts each secret meant for `host`'s headers in place of its placeholder, in every header value. */
export function injectHeaders(secrets: readonly EgressSecret[], headers: IncomingHttpHeaders, host: string): void {
  const mine = secrets.filter((s) => s.header && HEADER_SAFE.test(s.value) && policyAllows(s.hosts, host))
  if (!mine.length) return
  const put = (v: string) => mine.reduce((out, s) => (out.includes(s.placeholder) ? out.split(s.placeholder).join(s.value) : out), v)
  for (const [k, v] of Object.entries(headers)) {
    if (typeof v === 'string') headers[k] = put(v)
    else if (Array.isArray(v)) (headers as Record<string, string[]>)[k] = v.map(put)
  }
}

/** The placeholder → value pairs for `host`'s request bodies (the vendor's streaming substitution takes them). */
export function bodyPairs(secrets: readonly EgressSecret[], host: string): Array<{ sentinel: Buffer; realValue: Buffer }> | undefined {
  const mine = secrets.filter((s) => s.body && policyAllows(s.hosts, host))
  return mine.length ? mine.map((s) => ({ sentinel: Buffer.from(s.placeholder), realValue: Buffer.from(s.value) })) : undefined
}
