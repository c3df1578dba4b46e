// What a host SIGKILL must leave right, beyond its sessions answering again: no sandbox process of it left running,
// the workspaces of the sessions it held on the hosts that took them over, and no upload it was receiving half-stored.
// Looked at while the killed host is down (its restart waits for these), so everything is seen from the other hosts.
import type Anthropic from '@anthropic-ai/sdk'
import type { Host } from './hosts.js'
import { type SandboxKill, watchSandboxes } from './sandboxes.js'
import type { UploadProbes } from './uploads.js'
import type { WorkspaceProbes } from './workspaces.js'

export class KillChecks {
  readonly sandboxes: SandboxKill[] = []

  constructor(
    readonly probes: WorkspaceProbes,
    readonly uploads: UploadProbes,
    private readonly client: Anthropic,
  ) {}

  /** Just before `h` is SIGKILLed: what it holds and runs now; the returned check runs once it is killed. */
  async before(h: Host): Promise<(signalledAt: number) => Promise<void>> {
    const held = await this.probes.heldBy(h.id!)
    const flights = await this.uploads.start(h.name, h.url!)
    const procs = watchSandboxes(h.name, h.proc!.proc.pid!)
    return async (signalledAt) => {
      this.uploads.signalled(flights)
      const [gone] = await Promise.all([
        procs.gone(signalledAt),
        this.probes.check({ name: h.name, id: h.id! }, held),
        this.uploads.verify(flights, this.client),
      ])
      this.sandboxes.push(gone)
    }
  }
}
