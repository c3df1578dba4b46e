import v8 from 'node:v8'
import vm from 'node:vm'

/** A full collection of this thread's heap: what `--expose-gc` offers, asked for once the process runs. */
function fullCollection(): () => void {
  v8.setFlagsFromString('--expose-gc')
  return vm.runInNewContext('gc') as () => void
}

export interface CollectWhenQuietOptions {
  /** How long without a large body counts as quiet. Default 10 000 ms, when the parse workers exit too. */
  quietMs?: number
  /** Bytes of large bodies since the last collection that make one worth its pause. Default 32 MiB. */
  worthBytes?: number
  /** Told of each collection: the bytes of large bodies since the last one, and how long it paused the thread. */
  onCollected?: (bytes: number, ms: number) => void
}

/**
 * Collects this thread's garbage once large bodies stop coming. Every body is read into a buffer of its own, and
 * V8 frees a dead buffer only in a full collection, which it starts by itself when buffers grow by 64 MB or the
 * heap by half; its memory reducer, the collection for an idle isolate, backs off while timers run JavaScript, as
 * the heartbeats do every 0.5 s. So after a burst of large bodies up to 64 MB of dead buffers (and the heap's
 * garbage) stayed resident for as long as the process stayed quiet. The pause (0.1 s for an 80 MB heap on a busy
 * 2-core machine, well inside the hosts' 2.5 s heartbeat TTL) comes at most once per quiet spell.
 */
export class CollectWhenQuiet {
  private readonly quietMs: number
  private readonly worthBytes: number
  private readonly onCollected: CollectWhenQuietOptions['onCollected']
  private readonly collect = fullCollection()
  private bytes = 0
  private timer: NodeJS.Timeout | undefined

  constructor(opts: CollectWhenQuietOptions = {}) {
    this.quietMs = opts.quietMs ?? 10_000
    this.worthBytes = opts.worthBytes ?? 32 * 1024 * 1024
    this.onCollected = opts.onCollected
  }

  /** A large body was read. */
  note(bytes: number): void {
    this.bytes += bytes
    if (this.bytes < this.worthBytes) return
    if (this.timer) this.timer.refresh()
    else this.timer = setTimeout(() => this.quiet(), this.quietMs).unref()
  }

  private quiet(): void {
    const bytes = this.bytes
    this.timer = undefined
    this.bytes = 0
    const t0 = performance.now()
    this.collect()
    this.onCollected?.(bytes, performance.now() - t0)
  }

  close(): void {
    clearTimeout(this.timer)
    this.timer = undefined
  }
}
