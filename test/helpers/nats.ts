import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { startEmbeddedNats } from '../../supervisor/nats-server.js'

export interface TestNats {
  url: string
  /** The server's monitoring endpoint (`/connz`, `/jsz`, …), on loopback. */
  monitorUrl: string
  dir: string
  /** The process group of the server (and its watchdog): signal it to pause or resume the server. */
  pgid: number
  stop(): Promise<void>
  /** Synchronous kill and cleanup, for teardowns that run as the test process exits. */
  stopNow(): void
}

/** A real nats-server on a free loopback port with a temporary JetStream store, removed on stop. */
export async function startNats(): Promise<TestNats> {
  const dir = mkdtempSync(path.join(tmpdir(), 'troupe-nats-'))
  const nats = await startEmbeddedNats(path.join(dir, 'jetstream'), () => undefined)
  nats.unref()
  return {
    url: nats.url,
    monitorUrl: nats.monitorUrl,
    dir,
    pgid: nats.pgid,
    async stop() {
      await nats.stop()
      rmSync(dir, { recursive: true, force: true })
    },
    stopNow() {
      nats.killNow()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
