import {
  type ConsumerInfo,
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  type StreamInfo,
} from '@nats-io/jetstream'
import { readStream, type StreamRead } from '../read-stream.js'

/** What a section could not read: buckets and streams that do not exist yet, and reads left unfinished. */
export interface Gaps {
  /** Buckets (`troupe_…`) and streams (`TROUPE_…`, `KV_…`) that do not exist yet. */
  missing: string[]
  /** Reads the time budget cut short (saying how far each got) or that failed (saying why). */
  cut: string[]
}

/** A bucket's current values under a prefix, as far as the time allowed. */
export interface BucketValues {
  values: Map<string, Uint8Array>
  /** Keys (delete markers included) stored when the read began: more than `values` holds when the read was cut. */
  stored: number
  complete: boolean
}

const isDelete = (m: JsMsg) => {
  const op = m.headers?.get('KV-Operation')
  return op === 'DEL' || op === 'PURGE'
}

/**
 * The reads of one section of `troupe status`, all ending when `signal` aborts (the command's time budget): each
 * records in `gaps` what does not exist and what it could not finish, and gives what it has. None throws: a read that
 * fails is a gap too, so one broken stream leaves the other sections shown.
 */
export class Reads {
  readonly gaps: Gaps = { missing: [], cut: [] }

  constructor(
    readonly js: JetStreamClient,
    readonly jsm: JetStreamManager,
    readonly signal: AbortSignal,
  ) {}

  /**
   * The current values of `bucket`'s keys under `prefix`, by key (the prefix kept); null when the bucket does not exist.
   * With `each`, each value goes there as it is read instead (what it does with it counts against the time, and the
   * values need not all be held at once), and `values` stays empty.
   */
  async bucket(bucket: string, prefix = '', each?: (key: string, value: Uint8Array) => void): Promise<BucketValues | null> {
    const subjects = `$KV.${bucket}.`
    const values = new Map<string, Uint8Array>()
    const keep = each ?? ((key: string, value: Uint8Array) => void values.set(key, value))
    const info = await this.inTime(`${bucket} info`, () => this.jsm.streams.info(`KV_${bucket}`).catch(notFound))
    if (info === null) {
      this.missing(bucket)
      return null
    }
    const read = await this.messages(`${bucket}${prefix ? ` ${prefix}*` : ''}`, 'keys', {
      stream: `KV_${bucket}`,
      filter: `${subjects}${prefix}>`,
      // A bucket that keeps one value a key (ours all do) holds only current values: read in stored order, a scan for
      // the server, rather than the last of each subject, a search per key (measured here with 150,000 sessions: about
      // half again as many keys read within the time).
      deliver: info?.config.max_msgs_per_subject === 1 ? 'all' : 'last_per_subject',
      each: (m) => void (isDelete(m) || keep(m.subject.slice(subjects.length), m.data)),
    })
    if (read === null) {
      this.missing(bucket)
      return null
    }
    return { values, stored: read.stored, complete: read.complete }
  }

  /**
   * The data of the newest messages of `stream` on `filter`, oldest first: those among its last `count` messages (a
   * bounded read of what only grows). Null when the stream does not exist.
   */
  async newest(stream: string, filter: string, count: number): Promise<Uint8Array[] | null> {
    const info = await this.stream(stream)
    if (!info) return info === null ? null : []
    if (info.state.messages === 0) return []
    const out: Uint8Array[] = []
    const from = Math.max(1, info.state.first_seq, info.state.last_seq - count + 1)
    await this.messages(`${stream} (its newest ${count})`, 'messages', {
      stream,
      filter,
      deliver: { from },
      each: (m) => void (isDelete(m) || out.push(m.data)),
    })
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

  /**
   * `read()`'s answer; undefined, recorded as cut, when the time runs out first or it fails. What it ends in after the
   * time ran out is not waited for.
   */
  async inTime<T>(what: string, read: () => Promise<T>): Promise<T | undefined> {
    if (this.signal.aborted) {
      this.gaps.cut.push(`out of time before reading ${what}`)
      return undefined
    }
    let onAbort = () => {}
    const ended = new Promise<typeof OUT_OF_TIME>((resolve) => {
      onAbort = () => resolve(OUT_OF_TIME)
      this.signal.addEventListener('abort', onAbort, { once: true })
    })
    try {
      const out = await Promise.race([read(), ended])
      if (out !== OUT_OF_TIME) return out
      this.gaps.cut.push(`out of time reading ${what}`)
    } catch (err) {
      this.gaps.cut.push(`${what} failed: ${(err as Error).message}`)
    } finally {
      this.signal.removeEventListener('abort', onAbort)
    }
    return undefined
  }

  /** Reads a stream's messages into `each`; null when the stream does not exist, else how far it got. */
  private async messages(
    what: string,
    unit: string,
    o: Pick<StreamRead, 'stream' | 'filter' | 'deliver'> & { each(m: JsMsg): void },
  ): Promise<{ stored: number; complete: boolean } | null> {
    const read = await this.inTime(what, () => readStream(this.js, { ...o, signal: this.signal }))
    if (read === null) return null
    if (read === undefined) return { stored: 0, complete: false }
    let seen = 0
    try {
      for await (const m of read) {
        seen++
        o.each(m)
      }
    } catch (err) {
      this.gaps.cut.push(`${what}: read ${seen} of ${read.stored} ${unit}, then it failed: ${(err as Error).message}`)
      return { stored: read.stored, complete: false }
    }
    const complete = seen >= read.stored
    if (!complete) this.gaps.cut.push(`out of time reading ${what}: read ${seen} of ${read.stored} ${unit}`)
    return { stored: read.stored, complete }
  }

  private missing(name: string): void {
    if (!this.gaps.missing.includes(name)) this.gaps.missing.push(name)
  }
}

const OUT_OF_TIME = Symbol('out of time')

/** Null for a stream that does not exist; other errors thrown on. */
function notFound(err: unknown): null {
  if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound) return null
  throw err
}
