import { GaugeFamily, ReadGauge } from '../metrics/index.js'
import type { Sandbox, SandboxOptions } from './types.js'

/** What counting needs of a backend (backend.ts's `SandboxBackend`, which imports this file). */
interface Backend {
  kind: string
  create(opts: SandboxOptions): Sandbox
}

const open = new GaugeFamily('troupe_sandboxes_open', 'Sandboxes open in this process (one per session whose tools ran here and has not closed), by backend', [
  'backend',
])
const memory = new ReadGauge(
  'troupe_sandboxes_memory_bytes',
  "Memory the isolated sandboxes of this process hold together (their cgroup's working set); absent without cgroup v1 memory accounting",
)

/** The backend, its sandboxes counted while open. */
export function counted<B extends Backend>(backend: B): B {
  const gauge = open.child(backend.kind)
  return {
    ...backend,
    create(opts: SandboxOptions) {
      const sandbox = backend.create(opts)
      gauge.inc()
      const close = sandbox.close.bind(sandbox)
      let closed = false
      sandbox.close = () => {
        if (!closed) gauge.dec()
        closed = true
        return close()
      }
      return sandbox
    },
  }
}

/** Reads the sandboxes' memory at a scrape (the isolated backend's cgroup branch). */
export function trackSandboxMemory(used: () => number | undefined): void {
  memory.track(() => used() ?? [])
}
