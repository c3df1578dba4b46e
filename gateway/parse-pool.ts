import { availableParallelism } from 'node:os'
import { Piscina } from 'piscina'
import { ApiError } from '../protocol/errors/api-error.js'
import { fail } from '../protocol/errors/fail.js'
import type { ActorRequest } from '../protocol/envelope.js'
import type { Route } from '../protocol/routes/index.js'
import type { ParseResult, ParseTask } from './parse-worker.js'

/**
 * Bodies from this size up are parsed, validated and encoded on a worker thread. Below it, doing it inline
 * costs less than the hand-off (about a millisecond per 64 KiB of object-heavy JSON). Above it, JSON.parse and
 * the schemas cost up to seconds for 32 MiB, long enough to starve this process's heartbeats.
 */
export const OFF_LOOP_ABOVE = 64 * 1024

export interface ParsePoolOptions {
  /** Worker threads. Default: the machine's cores, at most 4. */
  threads?: number
  /** A worker idle this long exits (a pool that is not used costs no memory). Default 30 000 ms. */
  idleTimeoutMs?: number
}

/** Parses large request bodies off the event loop. Workers start on first use. */
export class ParsePool {
  private readonly pool: Piscina<ParseTask, ParseResult>

  constructor(opts: ParsePoolOptions = {}) {
    const threads = opts.threads ?? Math.min(4, availableParallelism())
    // Run from sources (tests, TROUPE_FROM_SOURCE), the worker is TypeScript: it needs tsx's loader, which
    // a worker does not inherit from a loader registered by API.
    const fromSource = import.meta.url.endsWith('.ts')
    this.pool = new Piscina({
      filename: new URL(`./parse-worker.${fromSource ? 'ts' : 'js'}`, import.meta.url).href,
      minThreads: 0,
      maxThreads: threads,
      idleTimeout: opts.idleTimeoutMs ?? 30_000,
      // Queued bodies are held in memory: past a short queue, say busy rather than pile them up.
      maxQueue: threads * 4,
      execArgv: fromSource ? ['--import', import.meta.resolve('tsx')] : [],
    })
  }

  /** The encoded actor request for `route` with this body, or the 400 the body earns. */
  async encode(route: Route, bytes: Uint8Array, request: Omit<ActorRequest, 'body'>): Promise<Uint8Array> {
    // Moved, not copied: the caller holds the body no longer.
    const own = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : new Uint8Array(bytes)
    let result: ParseResult
    try {
      result = await this.pool.run({ operationId: route.operationId, bytes: own, request }, { transferList: [own.buffer as ArrayBuffer] })
    } catch (err) {
      if ((err as Error).message?.includes('Task queue is at limit')) throw fail('parse_pool_busy')
      throw err
    }
    if (result instanceof Uint8Array) return result
    throw new ApiError(result.error)
  }

  close(): Promise<void> {
    return this.pool.destroy()
  }
}
