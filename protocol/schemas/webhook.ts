import { isIP } from 'node:net'
import { type } from 'arktype'
import { limitParam, pageParam } from './common.js'
import { lazy } from './lazy.js'

/**
 * Webhook endpoints on the wire (SPEC "Webhook endpoint", "Webhooks", "Webhook events"; DECISIONS "Webhooks").
 * Shapes and the URL rules only: whether the operator keyring is configured is the endpoint actor's to answer (422).
 */

/** The spec's own events (SPEC "Webhook events"), each produced at its lifecycle moment. */
export const SPEC_WEBHOOK_EVENT_TYPES = [
  'session.status_scheduled',
  'session.status_run_started',
  'session.status_idled',
  'session.status_rescheduled',
  'session.status_terminated',
  'session.budget_reached',
  'session.thread_created',
  'session.thread_idled',
  'session.thread_terminated',
  'session.outcome_evaluation_ended',
  'session.updated',
  'session.archived',
  'session.deleted',
  'deployment_run.succeeded',
  'deployment_run.failed',
] as const

/**
 * The managed-agents events the official client knows (`BetaWebhookEventData`) beyond the spec's: accepted, and each
 * delivered at its moment (docs/ARCHITECTURE.md "Webhook endpoints" says which).
 */
export const CLIENT_WEBHOOK_EVENT_TYPES = [
  'session.created',
  'session.pending',
  'session.running',
  'session.idled',
  'session.requires_action',
  'agent.created',
  'agent.updated',
  'agent.archived',
  'agent.deleted',
  'environment.created',
  'environment.updated',
  'environment.archived',
  'environment.deleted',
  'deployment.created',
  'deployment.updated',
  'deployment.paused',
  'deployment.unpaused',
  'deployment.archived',
  'deployment.deleted',
  'deployment_run.started',
  'vault.created',
  'vault.archived',
  'vault.deleted',
  'vault_credential.created',
  'vault_credential.archived',
  'vault_credential.deleted',
  'vault_credential.refresh_failed',
  'memory_store.created',
  'memory_store.archived',
  'memory_store.deleted',
] as const

/** The events an endpoint may subscribe to. */
export const WEBHOOK_EVENT_TYPES = [...SPEC_WEBHOOK_EVENT_TYPES, ...CLIENT_WEBHOOK_EVENT_TYPES] as const
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number]

/** The longest URL accepted. */
export const WEBHOOK_URL_MAX = 2048

/**
 * Why `url` cannot be a webhook endpoint, or undefined: https, port 443 only, no credentials, no fragment, and a host
 * name that is neither an IP literal nor localhost (SPEC "Webhook endpoint"). Where the name resolves is checked at
 * each delivery, not here (a record may change after the endpoint is stored).
 */
export function webhookUrlProblem(url: string): string | undefined {
  let u: URL
  try {
    u = new URL(url)
  } catch {
    return 'is not an absolute URL'
  }
  if (u.protocol !== 'https:') return `must use https (was ${u.protocol.slice(0, -1)})`
  // URL drops a port that is the scheme's default: an explicit :443 is the same URL.
  if (u.port !== '') return `must use port 443 (was ${u.port})`
  if (u.username || u.password) return 'must not carry credentials'
  if (url.includes('#')) return 'must not have a fragment'
  const host = u.hostname
  if (host.startsWith('[') || isIP(host)) return 'must name a host, not an IP address'
  // The WHATWG parser reads 0x7f.1, 2130706433 and 127.1 as IPv4 and prints them as such: caught above.
  if (host === 'localhost' || host.endsWith('.localhost') || host === 'localhost.') return 'must not name localhost'
  if (!host.includes('.')) return 'must name a fully qualified host (a dot in its name)'
  return undefined
}

export const WebhookUrl = lazy(() =>
  type(`string <= ${WEBHOOK_URL_MAX}`).narrow((s, ctx) => {
    const problem = webhookUrlProblem(s)
    return problem === undefined || ctx.reject({ problem: problem })
  }),
)

const EventTypes = lazy(() =>
  type
    .enumerated(...WEBHOOK_EVENT_TYPES)
    .array()
    .atLeastLength(1)
    .narrow((list, ctx) => {
      const seen = new Set<string>()
      for (const [i, t] of list.entries()) {
        if (seen.has(t)) return ctx.reject({ problem: `names ${t} twice`, relativePath: [i] })
        seen.add(t)
      }
      return true
    }),
)

export const WebhookCreate = lazy(() => type({ '+': 'reject', url: WebhookUrl, event_types: EventTypes }))
export type WebhookCreateT = typeof WebhookCreate.infer

export const WebhookUpdate = lazy(() =>
  type({
    '+': 'reject',
    'url?': WebhookUrl,
    'event_types?': EventTypes,
    'status?': "'enabled' | 'disabled'",
  }).narrow((b, ctx) => Object.keys(b).length > 0 || ctx.reject({ problem: 'must name url, event_types or status' })),
)
export type WebhookUpdateT = typeof WebhookUpdate.infer

/** The service disabling an endpoint (internal: no route). */
export const WebhookDisable = lazy(() => type({ '+': 'reject', reason: 'string <= 1000' }))

export const WebhookListQuery = lazy(() => type({ '+': 'reject', 'limit?': limitParam(100), 'page?': pageParam }))

/**
 * An endpoint as the API shows it. `signing_secret` only in the answers of create and regenerate. `disabled_reason`:
 * why the service disabled it (a redirect, a non-public address), null otherwise.
 */
export interface WebhookEndpoint {
  id: string
  type: 'webhook_endpoint'
  url: string
  event_types: WebhookEventType[]
  status: 'enabled' | 'disabled'
  disabled_reason: string | null
  created_at: string
  updated_at: string
}
export type WebhookEndpointWithSecret = WebhookEndpoint & { signing_secret: string }
