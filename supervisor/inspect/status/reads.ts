import { type ConsumerInfo, JetStreamApiCodes, JetStreamApiError, type JetStreamClient, type JetStreamManager, type StreamInfo } from '@nats-io/jetstream'
import { readStream } from '../read-stream.js'

/** What a section could not read: buckets and streams that do not exist yet, and reads the time budget cut short. */
export interface Gaps {
  /** Buckets (`troupe_…`) and streams (`TROUPE_…`) that do not exist yet. */
  missing: string[]
  /** Reads left unfinished when the command's time ran out, each saying how far it got. */
  cut: string[]
}

/** A bucket's current values under a prefix, as far as the time allowed. */
export interface BucketValues {
  values: Map<string, Uint8Array>
  /** Keys (delete markers included) stored when the read began: more than `values` holds when the read was cut. */
  stored: number
  complete: boolean
}

/**
 * The reads of one section of `troupe status`, all ending when `signal` aborts (the command's time budget): each
 * records in `gaps` what does not exist and what it could not finish, and gives what it has.
 */
export class Reads {
  readonly gaps: Gaps = { missing: [], cut: [] }

  constructor(
    readonly js: JetStreamClient,
    readonly jsm: JetStreamManager,
    readonly signal: AbortSignal,
  ) {}

  /** The current values of `bucket`'s keys under `prefix`, by key (the prefix kept); null when the bucket does not exist. */
  async bucket(bucket: string, prefix = ''): Promise<BucketValues | null> {
    const subjects = `$KV.${bucket}.`
    const read = await this.inTime(`${bucket} (not opened)`, () =>
      readStream(this.js, { stream: `KV_${bucket}`, filter: `${subjects}${prefix}>`, deliver: 'last_per_subject', signal: this.signal }),
    )
    if (read === undefined) return { values: new Map(), stored: 0, complete: false }
    if (read === null) {
      this.missing(bucket)
      return null
    }
    const values = new Map<string, Uint8Array>()
    let seen = 0
    for await (const m of read) {
      seen++
      const op = m.headers?.get('KV-Operation')
      if (op === 'DEL' || op === 'PURGE') continue
      values.set(m.subject.slice(subjects.length), m.data)
    }
    const complete = seen >= read.stored
    if (!complete) this.gaps.cut.push(`${bucket}${prefix ? ` ${prefix}*` : ''}: read ${seen} of ${read.stored} keys`)
    return { values, stored: read.stored, complete }
  }

  /**
   * The data of the newest messages of `stream` on `filter`, oldest first: those among its last `count` messages (a
   * bounded read of what only grows). Null when the stream does not exist.
   */
  async newest(stream: string, filter: string, count: number): Promise<Uint8Array[] | null> {
    const info = await this.stream(stream)
    if (!info) return info === null ? null : []
    const from = Math.max(info.state.first_seq, info.state.last_seq - count + 1)
    const read = await this.inTime(`${stream} (not opened)`, () => readStream(this.js, { stream, filter, deliver: { from }, signal: this.signal }))
    if (!read) return []
    const out: Uint8Array[] = []
    let seen = 0
    for await (const m of read) {
      seen++
      const op = m.headers?.get('KV-Operation')
      if (op !== 'DEL' && op !== 'PURGE') out.push(m.data)
    }
    if (seen < read.stored) this.gaps.cut.push(`${stream}: read ${seen} of its newest ${read.stored} messages`)
    return out
  }

  /** A stream's info (with per-subject counts when `subjects` is given); null when it does not exist. */
  async stream(name: string, subjects?: string): Promise<StreamInfo | null | undefined> {
    const info = await this.inTime(`${name} info`, () =>
      this.jsm.streams.info(name, subjects ? { subjects_filter: subjects } : undefined).catch((err: unknown) => {
        if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound) return null
        throw err
      }),
    )
    if (info === null) this.missing(name)
    return info
  }

  /** A durable consumer's info; null when it (or its stream) does not exist. */
  async consumer(stream: string, name: string): Promise<ConsumerInfo | null | undefined> {
    const info = await this.inTime(`${stream} consumer ${name} info`, () =>
      this.jsm.consumers.info(stream, name).catch((err: unknown) => {
        if (err instanceof JetStreamApiError && (err.code === JetStreamApiCodes.ConsumerNotFound || err.code === JetStreamApiCodes.StreamNotFound)) return null
        throw err
      }),
    )
    if (info === null) this.missing(`${stream} consumer ${name}`)
    return info
  }

  /** `read()`'s answer, or undefined (recorded as cut) when the time runs out first. */
  async inTime<T>(what: string, read: () => Promise<T>): Promise<T | undefined> {
    if (this.signal.aborted) {
      this.gaps.cut.push(what)
      return undefined
    }
    let onAbort = () => {}
    const ended = new Promise<undefined>((resolve) => {
      onAbort = () => resolve(undefined)
      this.signal.addEventListener('abort', onAbort, { once: true })
    })
    const p = read()
    // Whatever it ends in after the time ran out is not waited for.
    p.catch(() => undefined)
    try {
      const out = await Promise.race([p, ended])
      if (out === undefined && this.signal.aborted) this.gaps.cut.push(what)
      return out
    } finally {
      this.signal.removeEventListener('abort', onAbort)
    }
  }

  private missing(name: string): void {
    if (!this.gaps.missing.includes(name)) this.gaps.missing.push(name)
  }
}
