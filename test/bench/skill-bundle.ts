// `skills`: skill bundle validation (issue 27). A 1,000-file bundle of 25 MB goes through the skill pool
// (gateway/skill-pool.ts) over and over: bundles per second and MB/s. Meanwhile this thread plays the gateway: a local
// HTTP server answers trivial GETs that a keep-alive client here sends one after another, and the event loop's delay is
// sampled (perf_hooks). Their p99 while the pool validates is printed as a ratio of the same figures idle; validating
// on this thread instead (validateBundle inline) is shown beside it, for what the pool spares the loop.
// Run alone: node --import tsx test/bench/skill-bundle.ts
import { randomBytes } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import JSZip from 'jszip'
import { type BundleResult, validateBundle } from '../../gateway/skill-bundle.js'
import { SkillPool } from '../../gateway/skill-pool.js'
import { summary } from './bed.js'

const FILES = 1000
const TOTAL = 25 * 1000 * 1000
const ROUNDS = Number(process.env.BENCH_SKILL_ROUNDS ?? 6)
const IDLE_MS = Number(process.env.BENCH_MS ?? 3000)

/**
 * The bundle: SKILL.md and 999 files, 25 MB expanded. `incompressible`: random bytes, so the upload itself is about
 * 25 MB (the largest the 30 MB limit lets through, and the most deflate work per byte); otherwise text drawn from a
 * small vocabulary, which deflates about 3× as prose and code do.
 */
export async function makeBundle(incompressible: boolean): Promise<Uint8Array> {
  const z = new JSZip()
  z.file('bench-skill/SKILL.md', '---\nname: bench-skill\ndescription: A benchmark skill.\n---\n# Bench\n')
  const per = Math.floor(TOTAL / (FILES - 1))
  const words = Array.from({ length: 4096 }, () =>
    randomBytes(6)
      .toString('base64url')
      .slice(0, 3 + (randomBytes(1)[0]! % 6)),
  )
  for (let i = 0; i < FILES - 1; i++) {
    let content: Uint8Array
    if (incompressible) content = randomBytes(per)
    else {
      const parts: string[] = []
      let n = 0
      while (n < per) {
        const w = words[randomBytes(2).readUInt16LE(0) % words.length]!
        parts.push(w)
        n += w.length + 1
      }
      content = Buffer.from(parts.join(' ').slice(0, per))
    }
    z.file(`bench-skill/dir${i % 20}/file${i}.txt`, content)
  }
  return z.generateAsync({ type: 'uint8array', compression: 'DEFLATE', compressionOptions: { level: 6 } })
}

/** GETs one after another against a server on this thread, and the loop's delay, until `until` settles. */
export async function probe(until: Promise<unknown>): Promise<{ get: ReturnType<typeof summary>; loopP99: number; loopMax: number }> {
  const server = http.createServer((_req, res) => res.end('ok'))
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const { port } = server.address() as AddressInfo
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  const get = () =>
    new Promise<void>((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port, path: '/', agent }, (res) => {
          res.resume()
          res.on('end', resolve)
        })
        .on('error', reject)
    })
  const delay = monitorEventLoopDelay({ resolution: 1 })
  let done = false
  until.finally(() => (done = true))
  const times: number[] = []
  delay.enable()
  while (!done) {
    const t0 = performance.now()
    await get()
    times.push(performance.now() - t0)
  }
  delay.disable()
  agent.destroy()
  server.close()
  return { get: summary(times), loopP99: delay.percentile(99) / 1e6, loopMax: delay.max / 1e6 }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

type Probe = Awaited<ReturnType<typeof probe>>

/** ROUNDS bundles through a pool, two in flight (the pool's default threads on this machine), probed meanwhile. */
async function throughPool(pool: SkillPool, zip: Uint8Array): Promise<{ probe: Probe; seconds: number; latencies: number[] }> {
  let next = 0
  const latencies: number[] = []
  const t0 = performance.now()
  const work = Promise.all(
    [0, 1].map(async () => {
      while (next++ < ROUNDS) {
        const s = performance.now()
        const r: BundleResult = await pool.validate({ zip: new Uint8Array(zip) })
        if (!r.ok) throw new Error(r.message)
        latencies.push(performance.now() - s)
      }
    }),
  )
  const p = await probe(work)
  return { probe: p, seconds: (performance.now() - t0) / 1000, latencies }
}

async function runVariant(label: string, zip: Uint8Array): Promise<void> {
  const pool = new SkillPool()
  const unniced = new SkillPool({ nice: 0 })
  try {
    // Warm: start the workers, load jszip and yaml in them.
    const warm = await pool.validate({ zip: new Uint8Array(zip) })
    if (!warm.ok) throw new Error(`bench bundle refused: ${warm.message}`)
    await unniced.validate({ zip: new Uint8Array(zip) })
    const idle = await probe(sleep(IDLE_MS))
    const pooled = await throughPool(pool, zip)
    const plain = await throughPool(unniced, zip)
    // Inline, on this thread, for contrast: two bundles one after the other.
    const inline = await probe(
      (async () => {
        for (let i = 0; i < 2; i++) await validateBundle({ zip: new Uint8Array(zip) })
      })(),
    )

    console.log(
      `\n${label}: upload ${(zip.byteLength / 1e6).toFixed(1)} MB, ${warm.files} files, ${(warm.expandedBytes / 1e6).toFixed(1)} MB expanded, canonical zip ${(warm.zip.byteLength / 1e6).toFixed(1)} MB`,
    )
    for (const [name, run] of [
      ['pool (nice 10)', pooled],
      ['pool (nice 0)', plain],
    ] as const) {
      const lat = summary(run.latencies)
      console.log(
        `  ${name.padEnd(15)} ${(ROUNDS / run.seconds).toFixed(2)} bundles/s, ${((ROUNDS * zip.byteLength) / 1e6 / run.seconds).toFixed(1)} MB/s uploaded; one bundle p50 ${lat.p50.toFixed(0)} ms, max ${lat.max.toFixed(0)} ms`,
      )
    }
    const row = (name: string, p: Probe) =>
      console.log(
        `  ${name.padEnd(26)} GET p99 ${p.get.p99.toFixed(2).padStart(7)} ms (${(p.get.p99 / idle.get.p99).toFixed(2)}× idle, n=${p.get.n})` +
          `   loop delay p99 ${p.loopP99.toFixed(2).padStart(7)} ms (${(p.loopP99 / idle.loopP99).toFixed(2)}× idle), max ${p.loopMax.toFixed(1)} ms`,
      )
    row('idle', idle)
    row('validating, pool (nice 10)', pooled.probe)
    row('validating, pool (nice 0)', plain.probe)
    row('validating inline', inline)
  } finally {
    await pool.close()
    await unniced.close()
  }
}

export async function runSkillBundleBench(): Promise<void> {
  console.log(`\nskills: validating a ${FILES}-file, ${TOTAL / 1e6} MB bundle; this thread serves GETs meanwhile`)
  await runVariant('incompressible (random bytes)', await makeBundle(true))
  await runVariant('text (deflates ~3×)', await makeBundle(false))
}

if (import.meta.url === `file://${process.argv[1]}`) await runSkillBundleBench()
