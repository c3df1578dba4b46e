import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { connect } from '@nats-io/transport-node'
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

/** A real nats-server and a connection to it, with JetStream's client and manager; both go at the test's end. */
export async function natsWithClient(t: { teardown(fn: () => unknown): void }) {
  const nats = await startNats()
  const nc = await connect({ servers: nats.url })
  t.teardown(async () => {
    await nc.close()
    await nats.stop()
  })
  return { nats, nc, js: jetstream(nc), jsm: await jetstreamManager(nc) }
}
