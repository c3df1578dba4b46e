// Preloaded into a server under test (NODE_OPTIONS=--import=<this file>) to measure its event loop from the
// inside without any code of its own: on SIGUSR2 it prints the longest stall and the p99 since the last
// report to stderr (`loop-probe max_ms=… p99_ms=…`) and starts over. Only the main thread listens.
import { isMainThread } from 'node:worker_threads'
import { monitorEventLoopDelay } from 'node:perf_hooks'

if (isMainThread) {
  const h = monitorEventLoopDelay({ resolution: 10 })
  h.enable()
  process.on('SIGUSR2', () => {
    process.stderr.write(`loop-probe max_ms=${(h.max / 1e6).toFixed(1)} p99_ms=${(h.percentile(99) / 1e6).toFixed(1)}\n`)
    h.reset()
  })
}
