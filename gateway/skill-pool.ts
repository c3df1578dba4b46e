import { availableParallelism } from 'node:os'
import { Piscina } from 'piscina'
import type { BundleInput, BundleResult } from './skill-bundle.js'

export interface SkillPoolOptions {
  /** Worker threads. Default: the machine's cores, at most 2 (uploads are rare; parsing and serving come first). */
  threads?: number
  /** A worker idle this long exits, and the memory of the last bundle (up to ~100 MiB expanded) goes with it. Default 10 000 ms. */
  idleTimeoutMs?: number
  /**
   * The workers' niceness (Linux, where it is per thread): a bundle of 25 MB keeps a worker busy for seconds, and on a
   * machine with as many busy threads as cores the event loop would queue behind it. 0 leaves them at normal
   * priority. Default 10.
   */
  nice?: number
}

/** Validates skill bundles and writes their canonical zips off the event loop. Workers start on first use. */
export class SkillPool {
  private pool: Piscina<BundleInput, BundleResult> | undefined
  private readonly threads: number
  private readonly idleTimeoutMs: number
  private readonly nice: number

  constructor(opts: SkillPoolOptions = {}) {
    this.threads = opts.threads ?? Math.min(2, availableParallelism())
    this.idleTimeoutMs = opts.idleTimeoutMs ?? 10_000
    this.nice = opts.nice ?? 10
  }

  /**
   * The bundle's verdict. The input's byte buffers are moved to the worker, not copied, where a view spans its whole
   * buffer and no other view shares it: the caller must not use them afterwards. Others are copied.
   */
  validate(input: BundleInput): Promise<BundleResult> {
    const moved = new Set<ArrayBuffer>()
    const own = (bytes: Uint8Array): Uint8Array => {
      const buffer = bytes.buffer
      if (buffer instanceof ArrayBuffer && bytes.byteOffset === 0 && bytes.byteLength === buffer.byteLength && !moved.has(buffer)) {
        moved.add(buffer)
        return bytes
      }
      const copy = new Uint8Array(bytes)
      moved.add(copy.buffer)
      return copy
    }
    const task: BundleInput = 'zip' in input ? { zip: own(input.zip) } : { files: input.files.map((f) => ({ path: f.path, bytes: own(f.bytes) })) }
    return this.started().run(task, { transferList: [...moved] })
  }

  private started(): Piscina<BundleInput, BundleResult> {
    // Run from sources (tests, TROUPE_FROM_SOURCE), the worker is TypeScript: it needs tsx's loader, which a worker
    // does not inherit from a loader registered by API.
    const fromSource = import.meta.url.endsWith('.ts')
    this.pool ??= new Piscina({
      filename: new URL(`./skill-worker.${fromSource ? 'ts' : 'js'}`, import.meta.url).href,
      minThreads: 0,
      maxThreads: this.threads,
      idleTimeout: this.idleTimeoutMs,
      workerData: { nice: this.nice },
      execArgv: fromSource ? ['--import', import.meta.resolve('tsx')] : [],
    })
    return this.pool
  }

  close(): Promise<void> {
    return this.pool?.destroy() ?? Promise.resolve()
  }
}
