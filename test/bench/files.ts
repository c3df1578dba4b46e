// `files`: upload and download throughput of a 100 MB file through the whole stack (`troupe start` as `npm start`
// runs it, over each HTTP transport, the official client uploading, a plain fetch reading the download), beside a raw
// object store put and get of the same bytes on the same nats-server in the same round (nats.js, 1 MiB chunks as
// the file kind stores them). Ratios are medians of per-round ratios; the server's peak RSS (VmHWM) shows that no
// whole file is held in memory.
import { readFileSync } from 'node:fs'
import { toFile } from '@anthropic-ai/sdk'
import { Objm } from '@nats-io/obj'
import { connect } from '@nats-io/transport-node'
import { CHUNK_BYTES } from '../../actors/kit/object-stores.js'
import type { TransportName } from '../../gateway/transport.js'
import { clientFor } from '../helpers/troupe.js'
import { startAsNpmStart } from './bed.js'

const SIZE = 100 * 1000 * 1000
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!
const mbps = (ms: number) => SIZE / 1e6 / (ms / 1000)

/** Peak and current resident set of a process, MiB (Linux). */
function rss(pid: number): { peak: number; now: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kib = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0) / 1024
  return { peak: kib('VmHWM'), now: kib('VmRSS') }
}

/** The bytes in 1 MiB pieces, as a stream a reader pulls. */
function pieces(bytes: Buffer): ReadableStream<Uint8Array> {
  let at = 0
  return new ReadableStream({
    pull(c) {
      if (at >= bytes.length) return c.close()
      c.enqueue(bytes.subarray(at, at + CHUNK_BYTES))
      at += CHUNK_BYTES
    },
  })
}

async function drain(body: ReadableStream<Uint8Array>): Promise<number> {
  let n = 0
  for await (const c of body) n += c.length
  return n
}

async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t0 = performance.now()
  const value = await fn()
  return { ms: performance.now() - t0, value }
}

async function oneTransport(http: TransportName, bytes: Buffer): Promise<void> {
  const { troupe, natsUrl } = await startAsNpmStart({ TROUPE_HTTP: http })
  const nc = await connect({ servers: natsUrl })
  try {
    const os = await new Objm(nc).create('bench_raw')
    const files = clientFor(troupe.url).beta.files
    const pid = troupe.proc.pid!
    const before = rss(pid)
    const rows = { rawPut: [] as number[], rawGet: [] as number[], upload: [] as number[], download: [] as number[] }
    for (let round = 0; round < ROUNDS; round++) {
      const put = await timed(() => os.put({ name: `raw-${round}`, options: { max_chunk_size: CHUNK_BYTES } }, pieces(bytes)))
      const got = await timed(async () => drain((await os.get(`raw-${round}`))!.data))
      if (got.value !== SIZE) throw new Error(`raw get read ${got.value} bytes`)
      const up = await timed(async () => files.upload({ file: await toFile(bytes, 'bench.bin', { type: 'application/octet-stream' }) }))
      const down = await timed(async () => drain((await fetch(`${troupe.url}/v1/files/${up.value.id}/content`)).body!))
      if (down.value !== SIZE) throw new Error(`download read ${down.value} bytes`)
      rows.rawPut.push(put.ms)
      rows.rawGet.push(got.ms)
      rows.upload.push(up.ms)
      rows.download.push(down.ms)
      await os.delete(`raw-${round}`)
      await files.delete(up.value.id)
    }
    const after = rss(pid)
    const ratio = (ours: number[], raw: number[]) => median(ours.map((ms, i) => raw[i]! / ms))
    const line = (name: string, ms: number[]) =>
      `  ${name.padEnd(34)} ${mbps(median(ms)).toFixed(0).padStart(5)} MB/s  (${ms.map((x) => mbps(x).toFixed(0)).join(' / ')})`
    console.log(`\nfiles over ${http}: ${SIZE / 1e6} MB, median of ${ROUNDS} rounds (each round's MB/s in brackets)`)
    console.log(line('raw object store put', rows.rawPut))
    console.log(`${line('upload (official client)', rows.upload)}  ${ratio(rows.upload, rows.rawPut).toFixed(2)}× of the raw put`)
    console.log(line('raw object store get', rows.rawGet))
    console.log(`${line('download (fetch)', rows.download)}  ${ratio(rows.download, rows.rawGet).toFixed(2)}× of the raw get`)
    console.log(
      `  server RSS: ${before.now.toFixed(0)} MiB before, peak ${after.peak.toFixed(0)} MiB over the run (a whole file is ${(SIZE / 1048576).toFixed(0)} MiB)`,
    )
  } finally {
    await nc.close()
    troupe.killNow()
  }
}

export async function runFileBench(): Promise<void> {
  const bytes = Buffer.alloc(SIZE)
  for (let i = 0; i < SIZE; i += 4096) bytes.writeUInt32LE((i * 2654435761) >>> 0, i)
  for (const http of ['uws', 'node'] as const) await oneTransport(http, bytes)
}
