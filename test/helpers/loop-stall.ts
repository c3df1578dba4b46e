import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { TroupeProcess } from './troupe.js'

const PROBE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), 'loop-probe.mjs')

/** Environment for startTroupe that loads the event-loop and memory probe (loop-probe.mjs) into the server. */
export const LOOP_PROBE_ENV = { NODE_OPTIONS: `--import=${PROBE}` }

/** The server main thread's memory as `process.memoryUsage()` counts it, in MiB. */
export interface ProbedMemory {
  rss: number
  heapUsed: number
  heapTotal: number
  external: number
  arrayBuffers: number
}

/** Asks the probe for a report and returns it; the loop figures then start over. */
async function probe(p: TroupeProcess): Promise<{ max: number; p99: number; memory: ProbedMemory }> {
  const before = p.logs().length
  p.proc.kill('SIGUSR2')
  for (let i = 0; i < 300; i++) {
    const text = p.logs().slice(before)
    const loop = /loop-probe max_ms=([\d.]+) p99_ms=([\d.]+)/.exec(text)
    const mem = /mem-probe rss_mib=([\d.]+) heap_used_mib=([\d.]+) heap_total_mib=([\d.]+) external_mib=([\d.]+) array_buffers_mib=([\d.]+)/.exec(text)
    if (loop && mem) {
      const [rss, heapUsed, heapTotal, external, arrayBuffers] = mem.slice(1).map(Number) as [number, number, number, number, number]
      return { max: Number(loop[1]), p99: Number(loop[2]), memory: { rss, heapUsed, heapTotal, external, arrayBuffers } }
    }
    await new Promise((r) => setTimeout(r, 10))
  }
  throw new Error('the loop probe did not answer (was the server started with LOOP_PROBE_ENV?)')
}

/** The server's longest event-loop stall and p99 since the last reading, in ms; the probe then starts over. */
export async function readLoopStall(p: TroupeProcess): Promise<{ max: number; p99: number }> {
  const { max, p99 } = await probe(p)
  return { max, p99 }
}

/** The server main thread's memory (it also starts the loop figures over). */
export async function readMemory(p: TroupeProcess): Promise<ProbedMemory> {
  return (await probe(p)).memory
}
