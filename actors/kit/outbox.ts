import type { JetStreamClient } from '@nats-io/jetstream'
import { idFromKey } from '../../protocol/ids.js'
import { OUTBOX_PREFIX, OUTBOX_STREAM, outboxSubject } from '../../protocol/subjects.js'
import { thinEvent } from '../../protocol/webhook-event.js'
import { isTransientNatsError } from './nats-errors.js'
import type { Storage } from './replicas.js'
import { retry, startupRetry } from './retry-policy.js'
import { ensureStream } from './streams.js'

/** Payloads are kept this long (SPEC delivery rule 7): the deliveries made of them end long before. */
export const OUTBOX_MAX_AGE_MS = 30 * 24 * 3600_000

/** A publish refused for a moment (a leader election) is repeated for up to this long. */
const PUBLISH_RETRY = { ...startupRetry, deadlineMs: 10_000 }

/**
 * The `whe_` id of the webhook event a lifecycle change makes: derived from what made it (a session event's id, a
 * run's id, a deleted session's id) and the event's type, so every repeat of that change names the same event.
 */
export const webhookEventId = (type: string, source: string) => idFromKey('whe', `webhook.${type}`, source)

/** Opens the outbox stream (every actor host; it is written by the kinds whose lifecycle changes have no history). */
export async function ensureOutbox(storage: Storage): Promise<void> {
  await ensureStream(storage, 'outbox stream', {
    name: OUTBOX_STREAM,
    subjects: [`${OUTBOX_PREFIX}.>`],
    duplicate_window: 120_000_000_000,
    max_age: OUTBOX_MAX_AGE_MS * 1_000_000,
  })
}

/**
 * Lifecycle events that no session history holds (a session scheduled or deleted, a scheduled deployment run), for
 * webhooks: the exact bytes of each thin payload, `Nats-Msg-Id` its `whe_` id. A kind publishes once the change is
 * stored and before it answers, and again whenever it repeats the change's step (a retried create, a run resumed after
 * a crash): the repeat is the same event, stored once within two minutes and deduplicated by receivers after that.
 * Status changes are not published here: the fan-out reads them from the histories (actors/webhook/fanout.ts).
 */
export class Outbox {
  constructor(private readonly js: JetStreamClient) {}

  /**
   * `at`: when the change happened (epoch ms); `source`: what makes the event unique (default `dataId`); `vault`: a
   * credential's vault (`data.vault_id`).
   */
  async publish(type: string, dataId: string, at: number, source = dataId, vault?: string): Promise<void> {
    const id = webhookEventId(type, source)
    const bytes = thinEvent(id, at, type, dataId, undefined, vault)
    // The change is stored already: a moment's trouble of the store is waited out rather than losing its event.
    await retry(PUBLISH_RETRY, () => this.js.publish(outboxSubject(type), bytes, { msgID: id }), { retryable: isTransientNatsError })
  }
}
