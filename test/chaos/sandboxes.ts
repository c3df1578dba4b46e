// A host SIGKILL leaves no sandbox process behind: every process under the host (bwrap, what runs in its namespace,
// the file-tool server) is found through /proc while the host lives, just before the signal, and must be gone soon
// after it (bwrap runs with --die-with-parent; an orphan would be re-parented, so it is looked for by pid and start).
import { descendantsOf, stillRuns, type Proc } from '../helpers/procs.js'

/** How long the kernel may take to tear down what a dead host ran before a survivor counts. */
const GONE_WITHIN_MS = 5_000
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export interface SandboxKill {
  host: string
  /** Processes under the host at the signal, and its sandboxes among them (bwrap, its children: one per sandbox). */
  processes: number
  sandboxes: number
  /** Still running GONE_WITHIN_MS after the signal: `<pid> <comm>`. */
  survivors: string[]
  /** When the last of them was gone (ms after the signal). */
  goneMs?: number
}

/** What ran under host `pid` just before its kill; `gone()` once it is killed waits for all of it to end. */
export function watchSandboxes(host: string, pid: number): { gone(signalledAt: number): Promise<SandboxKill> } {
  const procs: Proc[] = descendantsOf(pid)
  return {
    async gone(signalledAt) {
      const rec: SandboxKill = { host, processes: procs.length, sandboxes: procs.filter((p) => p.comm === 'bwrap' && p.ppid === pid).length, survivors: [] }
      for (;;) {
        const left = procs.filter(stillRuns)
        if (!left.length) {
          rec.goneMs = Date.now() - signalledAt
          return rec
        }
        if (Date.now() - signalledAt > GONE_WITHIN_MS) {
          rec.survivors = left.map((p) => `${p.pid} ${p.comm}`)
          return rec
        }
        await sleep(20)
      }
    },
  }
}
