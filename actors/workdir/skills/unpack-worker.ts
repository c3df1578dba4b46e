import { setPriority } from 'node:os'
import { workerData } from 'piscina'
import { type Unpacked, type UnpackTask, unpackSkill } from './unpack.js'

// Niceness is per thread on Linux: unpacking yields the cores to the host's event loop whenever both want them.
if (process.platform === 'linux' && workerData?.nice > 0) {
  try {
    setPriority(workerData.nice)
  } catch {}
}

/** The unpack pool's task (unpack-pool.ts). */
export default function unpackTask(task: UnpackTask): Promise<Unpacked> {
  return unpackSkill(task)
}
