import { availableParallelism } from 'node:os'
import { Piscina } from 'piscina'
import { ApiError } from '../protocol/errors/api-error.js'
import { fail } from '../protocol/errors/fail.js'
import type { ActorRequest } from '../protocol/envelope.js'
import type { Route } from '../protocol/routes/index.js'
import { jsonDepthExceeds, MAX_JSON_DEPTH } from './json-depth.js'
import type { ParseResult, ParseTask } from './parse-worker.js'

/**
 * Bodies from this size up are parsed, validated and encoded on a worker thread. Below it, doing it inline
 * costs less than the hand-off (about a millisecond per 64 KiB of object-heavy JSON). Above it, JSON.parse and
 * the schemas cost up to seconds for 32 MiB, long enough to starve this process's heartbeats.
 */
export const OFF_LOOP_ABOVE = 64 * 1024

const MiB = 1024 * 1024

/** Bytes of large bodies queued or being parsed at once, unless told otherwise: eight bodies of the 32 MiB limit. */
export const DEFAULT_PARSE_BUDGET = 256 * MiB

export interface ParsePoolOptions {
  /** Worker threads. Default: the machine's cores, at most 4. */
  threads?: number
  /**
   * A worker idle this long exits, and the memory it grew to goes with it: an idle piscina worker is paused, so it
   * never collects the garbage of the last bodies it parsed (up to ~200 MB each). Default 10 000 ms.
   */
  idleTimeoutMs?: number
  /**
   * Bytes of bodies accepted for parsing and not yet parsed (queued, or on a worker). A body that would take them
   * past this is answered 503 with `retry-after-ms`; a body is never refused alone, so any size the body limit lets
   * through gets parsed. Default 256 MiB (`DEFAULT_PARSE_BUDGET`).
   */
  budgetBytes?: number
}

/** Parses large request bodies off the event loop. Workers start on first use. */
export class ParsePool {
  private readonly pool: Piscina<ParseTask, ParseResult>
  private readonly budgetBytes: number
  /** Bytes of the bodies accepted and not yet parsed. */
  private held = 0

  constructor(opts: ParsePoolOptions = {}) {
    const threads = opts.threads ?? Math.min(4, availableParallelism())
    this.budgetBytes = opts.budgetBytes ?? DEFAULT_PARSE_BUDGET
    // Run from sources (tests, TROUPE_FROM_SOURCE), the worker is TypeScript: it needs tsx's loader, which
    // a worker does not inherit from a loader registered by API.
    const fromSource = import.meta.url.endsWith('.ts')
    this.pool = new Piscina({
      filename: new URL(`./parse-worker.${fromSource ? 'ts' : 'js'}`, import.meta.url).href,
      minThreads: 0,
      maxThreads: threads,
      idleTimeout: opts.idleTimeoutMs ?? 10_000,
      // The queue is bounded by the budget's bytes, not by a count.
      execArgv: fromSource ? ['--import', import.meta.resolve('tsx')] : [],
    })
  }

  /** Bytes of the bodies accepted and not yet parsed. */
  get heldBytes(): number {
    return this.held
  }

  /** The encoded actor request for `route` with this body, or the 400 the body earns. */
  async encode(route: Route, bytes: Uint8Array, request: Omit<ActorRequest, 'body'>): Promise<Uint8Array> {
    // The depth scan stops at the first level too deep, and deep JSON opens its brackets first: over the first
    // bytes it refuses such a body for what an inline body costs, before it takes any of the budget. The worker
    // scans the rest.
    if (jsonDepthExceeds(bytes.subarray(0, OFF_LOOP_ABOVE), MAX_JSON_DEPTH)) throw fail('body_too_deep', MAX_JSON_DEPTH)
    const size = bytes.byteLength
    if (this.held > 0 && this.held + size > this.budgetBytes) throw fail('parse_pool_busy', this.budgetBytes / MiB)
    this.held += size
    try {
      // Moved, not copied: the caller holds the body no longer.
      const own = bytes.byteOffset === 0 && size === bytes.buffer.byteLength ? bytes : new Uint8Array(bytes)
      const result = await this.pool.run({ operationId: route.operationId, bytes: own, request }, { transferList: [own.buffer as ArrayBuffer] })
      if (result instanceof Uint8Array) return result
      throw new ApiError(result.error)
    } finally {
      this.held -= size
    }
  }

  close(): Promise<void> {
    return this.pool.destroy()
  }
}
