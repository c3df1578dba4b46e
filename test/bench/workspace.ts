// `npm run bench -- workspace`: what keeping a session's workspace across moves costs (actors/workdir/workspace/sync.ts),
// on one nats-server as `troupe start` embeds it: the save at the end of a tool call over a workspace of 1,000 small
// files (nothing changed: the scan alone; one file changed; the first save of them all), and the restore of 100 MB
// on a host without the directory (one file of 100 MB, then 100 files of 1 MB), beside a raw object store put and
// get of the same 100 MB on the same server. BENCH_ROUNDS (default 3) rounds of the restores, medians;
// BENCH_WORKSPACE_SAVES (default 50) saves with one file changed.
import { randomBytes } from 'node:crypto'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { Objm } from '@nats-io/obj'
import { connect } from '@nats-io/transport-node'
import pino from 'pino'
import { CHUNK_BYTES } from '../../actors/kit/object-stores.js'
import type { SandboxOwner } from '../../actors/workdir/port.js'
import { WorkspaceDir } from '../../actors/workdir/workspace/files.js'
import { WorkspaceStore } from '../../actors/workdir/workspace/store.js'
import { DEFAULT_WORKSPACE_BOUNDS, WorkspaceSync } from '../../actors/workdir/workspace/index.js'
import { newId } from '../../protocol/ids.js'
import { ObjectStores } from '../../protocol/subjects.js'
import { textResult } from '../../sandbox/types.js'
import { startNats } from '../helpers/nats.js'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const SAVES = Number(process.env.BENCH_WORKSPACE_SAVES ?? 50)
const SMALL_FILES = 1000
const MB100 = 100 * 1000 * 1000
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!
const ms = (x: number) => `${x.toFixed(1)} ms`

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now()
  await fn()
  return performance.now() - t0
}

export async function runWorkspaceBench(): Promise<void> {
  const nats = await startNats()
  const nc = await connect({ servers: nats.url })
  const root = mkdtempSync(path.join(tmpdir(), 'troupe-bench-ws-'))
  const log = pino({ level: 'warn' })
  try {
    const js = jetstream(nc)
    const jsm = await jetstreamManager(nc)
    const store = new WorkspaceStore(js, jsm, await new Objm(js).create(ObjectStores.workspaces))
    // What the sync needs of an actor: that it serves, and somewhere to say what a move lost (not measured).
    const owner: SandboxOwner = { dead: false, alive: () => undefined, checkServing: () => undefined, report: () => undefined }
    const sync = (session: string, dir: string) =>
      new WorkspaceSync(session, new WorkspaceDir(dir), `${dir}.workspace-gen`, owner, { store, bounds: DEFAULT_WORKSPACE_BOUNDS, log })
    const toolCall = (s: WorkspaceSync, fn: () => void = () => undefined) =>
      s.around(new AbortController().signal, async () => {
        fn()
        return textResult('ok')
      })

    // 1,000 small files in 10 directories.
    const small = path.join(root, 'small')
    for (let d = 0; d < 10; d++) {
      mkdirSync(path.join(small, `d${d}`), { recursive: true })
      for (let f = 0; f < SMALL_FILES / 10; f++) writeFileSync(path.join(small, `d${d}`, `f${f}.txt`), randomBytes(512).toString('hex'))
    }
    const s = sync(newId('sesn'), small)
    const first = await timed(() => toolCall(s))
    const unchanged: number[] = []
    const oneChanged: number[] = []
    for (let i = 0; i < SAVES; i++) {
      unchanged.push(await timed(() => toolCall(s)))
      oneChanged.push(await timed(() => toolCall(s, () => writeFileSync(path.join(small, 'd3', 'f7.txt'), `changed ${i}`))))
    }
    console.log(`\nworkspace: the save at the end of a tool call, ${SMALL_FILES} files of 1 KiB in 10 directories, ${SAVES} saves each`)
    console.log(`  first save (every file)   ${ms(first)}`)
    console.log(`  nothing changed (a scan)  p50 ${ms(pct(unchanged, 0.5))}  p99 ${ms(pct(unchanged, 0.99))}`)
    console.log(`  one file changed          p50 ${ms(pct(oneChanged, 0.5))}  p99 ${ms(pct(oneChanged, 0.99))}`)

    // 100 MB restored on a host without the directory.
    const rows = { one: [] as number[], hundred: [] as number[], rawPut: [] as number[], rawGet: [] as number[] }
    const bytes = randomBytes(MB100)
    const raw = await new Objm(js).create('bench_ws_raw')
    for (let round = 0; round < ROUNDS; round++) {
      for (const shape of ['one', 'hundred'] as const) {
        const session = newId('sesn')
        const src = path.join(root, `${shape}-${round}-src`)
        mkdirSync(src)
        if (shape === 'one') writeFileSync(path.join(src, 'big.bin'), bytes)
        else for (let i = 0; i < 100; i++) writeFileSync(path.join(src, `part-${i}.bin`), bytes.subarray(i * 1e6, (i + 1) * 1e6))
        await toolCall(sync(session, src))
        rmSync(src, { recursive: true })
        const dest = path.join(root, `${shape}-${round}-dest`)
        mkdirSync(dest)
        // The first tool call on the new host restores before it runs; its own run is nothing.
        rows[shape].push(await timed(() => toolCall(sync(session, dest))))
        rmSync(dest, { recursive: true })
        await store.remove(session)
      }
      rows.rawPut.push(
        await timed(() =>
          raw.put(
            { name: `raw-${round}`, options: { max_chunk_size: CHUNK_BYTES } },
            new ReadableStream({
              start(c) {
                for (let at = 0; at < bytes.length; at += CHUNK_BYTES) c.enqueue(bytes.subarray(at, at + CHUNK_BYTES))
                c.close()
              },
            }),
          ),
        ),
      )
      rows.rawGet.push(await timed(async () => raw.getBlob(`raw-${round}`)))
    }
    const mbps = (x: number) => `${(MB100 / 1e6 / (x / 1000)).toFixed(0)} MB/s`
    console.log(`\nworkspace: a restore of 100 MB on a host without the directory, median of ${ROUNDS} rounds`)
    console.log(`  one file of 100 MB        ${ms(median(rows.one))}  (${mbps(median(rows.one))})`)
    console.log(`  100 files of 1 MB         ${ms(median(rows.hundred))}  (${mbps(median(rows.hundred))})`)
    console.log(
      `  raw object store put      ${ms(median(rows.rawPut))}  (${mbps(median(rows.rawPut))}); get ${ms(median(rows.rawGet))}  (${mbps(median(rows.rawGet))})`,
    )
  } finally {
    await nc.close()
    await nats.stop()
    rmSync(root, { recursive: true, force: true })
  }
}
