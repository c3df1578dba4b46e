// Preloaded into a server under test (NODE_OPTIONS=--import=<this file>) to measure it from the inside without
// any code of its own: on SIGUSR2 it prints the longest event-loop stall and the p99 since the last report
// (`loop-probe max_ms=… p99_ms=…`, then it starts over) and the main thread's memory as node counts it
// (`mem-probe rss_mib=… heap_used_mib=… heap_total_mib=… external_mib=… array_buffers_mib=…`), to stderr.
// Only the main thread listens.
import { isMainThread } from 'node:worker_threads'
import { monitorEventLoopDelay } from 'node:perf_hooks'

const mib = (n) => (n / 1048576).toFixed(1)

if (isMainThread) {
  const h = monitorEventLoopDelay({ resolution: 10 })
  h.enable()
  process.on('SIGUSR2', () => {
    const m = process.memoryUsage()
    process.stderr.write(
      `loop-probe max_ms=${(h.max / 1e6).toFixed(1)} p99_ms=${(h.percentile(99) / 1e6).toFixed(1)}\n` +
        `mem-probe rss_mib=${mib(m.rss)} heap_used_mib=${mib(m.heapUsed)} heap_total_mib=${mib(m.heapTotal)} external_mib=${mib(m.external)} array_buffers_mib=${mib(m.arrayBuffers)}\n`,
    )
    h.reset()
  })
}
