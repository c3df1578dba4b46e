import t from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { startTroupe, type StartOptions, type TroupeProcess } from './troupe.js'

export interface Scratch {
  /** A new empty data directory. */
  dataDir(): string
  /** `startTroupe`, the process killed when the file ends if the test did not stop it. */
  start(opts: StartOptions): Promise<TroupeProcess>
}

/**
 * The processes and data directories a test file makes, killed and removed when the file ends (tap runs the root
 * teardown as the process exits, where awaiting is not possible: the kill is synchronous).
 */
export function scratch(prefix: string): Scratch {
  const dirs: string[] = []
  const procs: TroupeProcess[] = []
  t.teardown(() => {
    for (const p of procs) p.killNow()
    for (const d of dirs) rmSync(d, { recursive: true, force: true })
  })
  return {
    dataDir() {
      const d = mkdtempSync(path.join(tmpdir(), prefix))
      dirs.push(d)
      return d
    },
    async start(opts) {
      const p = await startTroupe(opts)
      procs.push(p)
      return p
    },
  }
}
