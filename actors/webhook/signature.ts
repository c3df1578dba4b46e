import { randomBytes } from 'node:crypto'
import { Webhook } from 'standardwebhooks'

/** A new signing secret: `whsec_` then the standard base64 of 32 random bytes (DECISIONS.md). */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`
}

/**
 * The headers of one attempt (Standard Webhooks, through its library): the event id, the time of this attempt in
 * Unix seconds, and `v1,<base64 HMAC-SHA256>` of `<id>.<timestamp>.<body>` with the endpoint's secret. Each attempt
 * signs afresh: a retry keeps the id and the body, and gets a new timestamp and signature.
 */
export function attemptHeaders(secret: string, id: string, body: string, now: Date = new Date()): Record<string, string> {
  const at = new Date(Math.floor(now.getTime() / 1000) * 1000)
  return {
    'webhook-id': id,
    'webhook-timestamp': String(at.getTime() / 1000),
    'webhook-signature': new Webhook(secret).sign(id, at, body),
  }
}
