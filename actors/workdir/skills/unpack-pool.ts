import { Piscina } from 'piscina'
import type { Unpacked, UnpackTask } from './unpack.js'

/**
 * One worker thread per process unpacks skill bundles (inflating 25 MB holds a thread for a second or more), so a
 * host's event loop never waits on it. Started on first use; it exits after 10 s without work, and the last bundle's
 * memory goes with it. Niceness 10, as the gateway's skill pool.
 */
let pool: Piscina<UnpackTask, Unpacked> | undefined

/**
 * Unpacks on the worker. `task.zip`'s buffer is moved there (the caller must not use it afterwards) when the view spans
 * all of it, else copied. An abort ends the worker (what it wrote stays, for the caller's next pass to remove).
 */
export function unpackOffThread(task: UnpackTask, signal?: AbortSignal): Promise<Unpacked> {
  // Run from sources (tests, TROUPE_FROM_SOURCE), the worker is TypeScript: it needs tsx's loader, which a worker does
  // not inherit from a loader registered by API.
  const fromSource = import.meta.url.endsWith('.ts')
  pool ??= new Piscina({
    filename: new URL(`./unpack-worker.${fromSource ? 'ts' : 'js'}`, import.meta.url).href,
    minThreads: 0,
    maxThreads: 1,
    idleTimeout: 10_000,
    workerData: { nice: 10 },
    execArgv: fromSource ? ['--import', import.meta.resolve('tsx')] : [],
  })
  const { zip } = task
  const whole = zip.byteOffset === 0 && zip.byteLength === zip.buffer.byteLength && zip.buffer instanceof ArrayBuffer
  const moved = whole ? zip : new Uint8Array(zip)
  return pool.run({ ...task, zip: moved }, { transferList: [moved.buffer as ArrayBuffer], signal })
}
