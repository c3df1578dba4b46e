import { AckPolicy, DeliverPolicy, JetStreamApiError, type JetStreamManager, type StoredMsg } from '@nats-io/jetstream'

/**
 * Removing messages from a replicated stream without purging a subject. Under stacked faults (a node paused, the others
 * killed and restarted) nats-server 2.9.10 applies subject purges unlike on a stream's replicas: a bare R3 stream with a
 * subject purge every third publish ended with 75, 3 and 75 messages on its three nodes, and the object stores lost skill
 * bundles and workspace saves that way (test/chaos/purge-divergence.ts). The same load deleting messages one sequence
 * at a time ended alike on every node. A rollup (`Nats-Rollup: sub`, what nats.js's object store and a KV purge write)
 * is a purge too. So nothing of ours purges a subject of a replicated stream: what must go is deleted by sequence.
 */

/** JSSequenceNotFoundErrF: the message is already gone (an earlier attempt deleted it). */
const SEQUENCE_NOT_FOUND = 10043
/** Deletes in flight at once: each is a raft proposal; one at a time they cost a round trip each. */
const IN_FLIGHT = 64
/** Headers-only messages asked of the server per pull when listing a subject's sequences. */
const BATCH = 1024
/** A pull that brings nothing for this long while messages are said to be pending ends the listing. */
const PULL_EXPIRES_MS = 5000
const NANOS_PER_MS = 1_000_000
/** Rounds of `clearSubject`: the consumer's, then the leader's, then one more for what came meanwhile. */
const ROUNDS = 3

/**
 * Deletes messages by sequence (not erased: the file store marks them deleted), `IN_FLIGHT` at a time; one already gone
 * counts as deleted. Only sequences read from the stream: nats-server 2.9 leaves a delete past the stream's last
 * sequence unanswered.
 */
export async function deleteSequences(jsm: JetStreamManager, stream: string, seqs: readonly number[]): Promise<void> {
  let next = 0
  const worker = async () => {
    while (next < seqs.length) {
      const seq = seqs[next++]!
      await jsm.streams.deleteMessage(stream, seq, false).catch((err: unknown) => {
        if (!(err instanceof JetStreamApiError && err.code === SEQUENCE_NOT_FOUND)) throw err
      })
    }
  }
  await Promise.all(Array.from({ length: Math.min(IN_FLIGHT, seqs.length) }, worker))
}

/**
 * The sequences of the messages on `filter`, listed by an ephemeral consumer that delivers only their headers (a
 * subject of 1 MiB chunks costs a few hundred bytes a message). Such a consumer may sit on a replica that is behind:
 * the list can be short, never wrong.
 */
async function sequencesOn(jsm: JetStreamManager, stream: string, filter: string): Promise<number[]> {
  const js = jsm.jetstream()
  const info = await jsm.consumers.add(stream, {
    filter_subject: filter,
    deliver_policy: DeliverPolicy.All,
    ack_policy: AckPolicy.None,
    headers_only: true,
    mem_storage: true,
    num_replicas: 1,
    inactive_threshold: 30_000 * NANOS_PER_MS,
  })
  const consumer = js.consumers.getConsumerFromInfo(info)
  const seqs: number[] = []
  try {
    for (let pending = info.num_pending; pending > 0; ) {
      const batch = await consumer.fetch({ max_messages: Math.min(pending, BATCH), expires: PULL_EXPIRES_MS })
      let got = 0
      for await (const m of batch) {
        seqs.push(m.seq)
        pending = m.info.pending
        got++
      }
      // Nothing came: the pending messages went meanwhile.
      if (!got) break
    }
  } finally {
    consumer.delete().catch(() => undefined)
  }
  return seqs
}

/**
 * The messages on `subject` (no wildcard), first to last, read one at a time from the stream's leader (what it holds is
 * what counts), bodies included: for small messages, such as object meta entries.
 */
export async function* messagesAtLeader(jsm: JetStreamManager, stream: string, subject: string): AsyncGenerator<StoredMsg> {
  for (let seq = 1; ; ) {
    // nats-server answers next_by_subj on the leader's message get too (2.9 and later); nats.js types only the direct one.
    const m = await jsm.streams.getMessage(stream, { seq, next_by_subj: subject } as unknown as { seq: number })
    if (!m) return
    yield m
    seq = m.seq + 1
  }
}

/**
 * Deletes every message on `filter` (a subject or a wildcard) by sequence, in place of a purge; the number deleted. The
 * stream's leader says what is left. A single message is found at the leader (one read, its body included: at most a
 * chunk); more are listed by a headers-only consumer, and what that one missed (its replica was behind) is then found
 * at the leader, subject by subject. Repeating it is harmless; a subject someone keeps writing to throws after a few
 * rounds.
 */
export async function clearSubject(jsm: JetStreamManager, stream: string, filter: string): Promise<number> {
  let deleted = 0
  for (let round = 0; ; round++) {
    const si = await jsm.streams.info(stream, { subjects_filter: filter })
    const left = Object.entries(si.state.subjects ?? {}).filter(([, n]) => n > 0)
    if (!left.length) return deleted
    if (round === ROUNDS) throw new Error(`${stream}: ${left.length} subject(s) on ${filter} still hold messages after ${ROUNDS} rounds of deletes`)
    const seqs: number[] = []
    if (round === 0 && (left.length > 1 || left[0]![1] > 1)) seqs.push(...(await sequencesOn(jsm, stream, filter)))
    else
      for (const [subject, n] of left) {
        const found = seqs.length
        for await (const m of messagesAtLeader(jsm, stream, subject)) if (seqs.push(m.seq) - found === n) break
      }
    await deleteSequences(jsm, stream, seqs)
    deleted += seqs.length
  }
}
