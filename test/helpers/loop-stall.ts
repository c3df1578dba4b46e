import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { TroupeProcess } from './troupe.js'

const PROBE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), 'loop-probe.mjs')

/** Environment for startTroupe that loads the event-loop probe (loop-probe.mjs) into the server. */
export const LOOP_PROBE_ENV = { NODE_OPTIONS: `--import=${PROBE}` }

/** The server's longest event-loop stall and p99 since the last reading, in ms; the probe then starts over. */
export async function readLoopStall(p: TroupeProcess): Promise<{ max: number; p99: number }> {
  const before = p.logs().length
  p.proc.kill('SIGUSR2')
  for (let i = 0; i < 300; i++) {
    const m = /loop-probe max_ms=([\d.]+) p99_ms=([\d.]+)/.exec(p.logs().slice(before))
    if (m) return { max: Number(m[1]), p99: Number(m[2]) }
    await new Promise((r) => setTimeout(r, 10))
  }
  throw new Error('the loop probe did not answer (was the server started with LOOP_PROBE_ENV?)')
}
