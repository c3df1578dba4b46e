import { fail } from '../../protocol/errors/fail.js'
import type { WebhookKind } from '../../protocol/ops/webhook.js'
import type { WebhookEndpoint } from '../../protocol/schemas/webhook.js'
import { now } from '../../protocol/time.js'
import { type DurableState, type Handlers, keyedCreate, type Keyring, pageOf, type Projection } from '../kit/index.js'
import { newSigningSecret } from './signature.js'
import { nextIntervals, secretAad, type WebhookState } from './state.js'

/** Enabled intervals an endpoint keeps: older ones concern events long since fanned out. */
const INTERVALS_KEPT = 50

export interface WebhookDeps {
  states: DurableState<WebhookState, typeof WebhookKind>
  projection: Projection<WebhookEndpoint, WebhookState>
  /** The operator keyring; absent, every webhook op answers 422 (SPEC "Webhooks"). */
  keyring: Keyring | undefined
  /** Why the cluster's keyrings do not work together (HostContext.keyringConflict); then every op is refused. */
  keyringConflict: () => string | undefined
}

export function webhookOps({ states, projection, keyring, keyringConflict }: WebhookDeps): Handlers<typeof WebhookKind> {
  const ring = (): Keyring => {
    if (!keyring) throw fail('webhooks_unavailable')
    const conflict = keyringConflict()
    if (conflict) throw fail('keyring_mismatch', conflict)
    return keyring
  }

  const ops = states.ops({
    get: {
      shared: (s) => {
        ring()
        return s.endpoint
      },
    },

    update(s, { body: b }) {
      ring()
      const e = s.endpoint
      const status = b.status ?? e.status
      const next: WebhookEndpoint = {
        ...e,
        url: b.url ?? e.url,
        event_types: b.event_types ?? e.event_types,
        status,
        // A person enabling it again clears why the service disabled it.
        disabled_reason: status === 'enabled' ? null : e.disabled_reason,
      }
      if (JSON.stringify(next) === JSON.stringify(e)) return { reply: e }
      const enabled = nextIntervals(s.enabled, e, next, Date.now(), INTERVALS_KEPT)
      const endpoint = { ...next, updated_at: now() }
      return { state: { ...s, endpoint, enabled }, reply: endpoint }
    },

    disable(s, { body: b }) {
      const e = s.endpoint
      if (e.status === 'disabled') return { reply: e }
      const endpoint: WebhookEndpoint = { ...e, status: 'disabled', disabled_reason: b.reason, updated_at: now() }
      const enabled = nextIntervals(s.enabled, e, endpoint, Date.now(), INTERVALS_KEPT)
      return { state: { ...s, endpoint, enabled }, reply: endpoint }
    },

    delete(s) {
      ring()
      return { delete: true, reply: { id: s.endpoint.id, type: 'webhook_endpoint_deleted' as const } }
    },

    regenerate_signing_secret(s) {
      const signing_secret = newSigningSecret()
      const secret = ring().seal(signing_secret, secretAad(s.endpoint.id))
      return { state: { ...s, secret, endpoint: { ...s.endpoint, updated_at: now() } }, reply: { signing_secret } }
    },
  })

  return {
    // Placed on any host: the id is new, and the create of its state is the fence against a second one.
    async create(req) {
      const keys = ring()
      const b = req.body
      return keyedCreate('whep', 'webhooks.create', req, {
        stored: (id) => states.read(id),
        answer: (s) => ({ ...s.endpoint, signing_secret: keys.open(s.secret, secretAad(s.endpoint.id)) }),
        async make(id, createdBy) {
          const t = now()
          const endpoint: WebhookEndpoint = {
            id,
            type: 'webhook_endpoint',
            url: b.url,
            event_types: b.event_types,
            status: 'enabled',
            disabled_reason: null,
            created_at: t,
            updated_at: t,
          }
          const signing_secret = newSigningSecret()
          const state: WebhookState = {
            endpoint,
            ...(createdBy ? { created_by: createdBy } : {}),
            secret: keys.seal(signing_secret, secretAad(id)),
            enabled: [[Date.now(), null, b.event_types]],
          }
          return (await states.create(id, state)) && { ...endpoint, signing_secret }
        },
      })
    },

    async list({ query: q }) {
      ring()
      await projection.fresh()
      return pageOf(projection, 'webhooks', {}, q.page, q.limit ?? 20, () => true)
    },

    ...ops,
  }
}
