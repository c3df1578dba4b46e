// `skills.server`: issue 27's check against the real server. `troupe start` as `npm start` runs it (its embedded
// nats-server, the default log level); the 1,000-file, 25 MB bundle (random bytes: the upload is 25 MB) goes up as
// raw multipart through POST /v1/skills/{id}/versions, one after another, for bundles/s and MB/s end to end (read,
// validated on the skill pool, canonical zip stored, version recorded). Meanwhile GETTERS keep-alive clients in their
// own process (loadgen.ts) GET /v1/skills/{id} back to back; the same load alone, in the same round, is the baseline,
// and the raw hop (uWebSockets.js + one NATS request/reply, bed.ts) shows what the machine gives. Knobs:
// BENCH_SKILL_GET_MS (each GET run, default 4000), BENCH_SKILL_PAIRS (idle/loaded rounds, default 3),
// BENCH_SKILL_UPLOADS (uploads timed alone, default 4), BENCH_SKILL_GETTERS (default 8).
// Run alone: node --import tsx test/bench/skill-server.ts
import http from 'node:http'
import { rmSync } from 'node:fs'
import { type LoadResult, load, loadInBackground, ready, startAsNpmStart, startBaseline, stopServer, summary } from './bed.js'
import { makeBundle } from './skill-bundle.js'

const GET_MS = Number(process.env.BENCH_SKILL_GET_MS ?? 4000)
const PAIRS = Number(process.env.BENCH_SKILL_PAIRS ?? 3)
const UPLOADS = Number(process.env.BENCH_SKILL_UPLOADS ?? 4)
const GETTERS = Number(process.env.BENCH_SKILL_GETTERS ?? 8)
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!

/** The zip as the one part `file` of a multipart body, built once: the uploader spends no CPU per upload on it. */
function multipartOf(zip: Uint8Array): { body: Buffer; type: string } {
  const boundary = `----troupebench${Date.now().toString(16)}`
  const head = `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="bundle.zip"\r\ncontent-type: application/zip\r\n\r\n`
  return { body: Buffer.concat([Buffer.from(head), zip, Buffer.from(`\r\n--${boundary}--\r\n`)]), type: `multipart/form-data; boundary=${boundary}` }
}

/**
 * One upload, on a connection of its own (one per 25 MB costs nothing, and a kept-alive one would sit idle through
 * the GET-only runs, past the server's idle timeout): its answer's JSON, or a throw on a status other than 200.
 */
function upload(base: string, path: string, m: { body: Buffer; type: string }): Promise<any> {
  const u = new URL(path, base)
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname,
        method: 'POST',
        agent: false,
        headers: { 'content-type': m.type, 'content-length': m.body.length, 'anthropic-beta': 'skills-2025-10-02', 'x-api-key': 'bench' },
      },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c) => chunks.push(c))
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8')
          if (res.statusCode !== 200) return reject(new Error(`POST ${path}: ${res.statusCode} ${text}`))
          resolve(JSON.parse(text))
        })
      },
    )
    req.on('error', reject)
    req.end(m.body)
  })
}

const line = (name: string, runs: LoadResult[], idle?: LoadResult[]) => {
  const p50 = median(runs.map((r) => r.p50))
  const p99 = median(runs.map((r) => r.p99))
  const ratio = idle ? `  p99 ${(p99 / median(idle.map((r) => r.p99))).toFixed(2)}× idle, p50 ${(p50 / median(idle.map((r) => r.p50))).toFixed(2)}×` : ''
  const errors = runs.reduce((n, r) => n + r.errors, 0)
  console.log(
    `  ${name.padEnd(36)} ${median(runs.map((r) => r.rps))
      .toFixed(0)
      .padStart(6)} req/s  p50 ${p50.toFixed(2).padStart(7)} ms  p99 ${p99.toFixed(2).padStart(7)} ms${ratio}` +
      `  (p99 ${runs.map((r) => r.p99.toFixed(1)).join(' / ')})${errors ? `  ${errors} errors` : ''}`,
  )
}

export async function runSkillServerBench(): Promise<void> {
  const zip = await makeBundle(true)
  const mb = zip.byteLength / 1e6
  const body = multipartOf(zip)
  const { troupe, natsUrl, dataDir } = await startAsNpmStart()
  const baseline = await startBaseline(natsUrl)
  try {
    await ready(troupe.url)
    const skill = await upload(troupe.url, '/v1/skills', body)
    const versions = `/v1/skills/${skill.id}/versions`
    const getUrl = `${troupe.url}/v1/skills/${skill.id}`
    // Warm (JIT, connections, the pool's workers), then measure.
    load(getUrl, 'GET', undefined, 1000, GETTERS)
    load(`${baseline.url}/get`, 'GET', undefined, 1000, GETTERS)
    await upload(troupe.url, versions, body)

    const alone: number[] = []
    for (let i = 0; i < UPLOADS; i++) {
      const t0 = performance.now()
      await upload(troupe.url, versions, body)
      alone.push(performance.now() - t0)
    }

    const hop: LoadResult[] = []
    const idle: LoadResult[] = []
    const loaded: LoadResult[] = []
    const during: number[] = []
    let loadedSeconds = 0
    for (let round = 0; round < PAIRS; round++) {
      hop.push(load(`${baseline.url}/get`, 'GET', undefined, GET_MS, GETTERS))
      idle.push(load(getUrl, 'GET', undefined, GET_MS, GETTERS))
      // Uploads back to back for as long as the GETs run (the last one may end a little after them).
      const gets = loadInBackground(getUrl, 'GET', GET_MS, GETTERS)
      let done = false
      gets.finally(() => (done = true)).catch(() => undefined)
      const t0 = performance.now()
      while (!done) {
        const s = performance.now()
        await upload(troupe.url, versions, body)
        during.push(performance.now() - s)
      }
      loadedSeconds += (performance.now() - t0) / 1000
      loaded.push(await gets)
    }

    const a = summary(alone)
    const aloneSeconds = alone.reduce((x, y) => x + y, 0) / 1000
    console.log(`\nskills through the server (troupe start, uws): a ${mb.toFixed(1)} MB upload, 1,000 files, 25 MB expanded; ${GETTERS} GET clients`)
    console.log(
      `  uploads alone             ${(UPLOADS / aloneSeconds).toFixed(2)} bundles/s, ${((UPLOADS * mb) / aloneSeconds).toFixed(1)} MB/s; one upload p50 ${a.p50.toFixed(0)} ms, max ${a.max.toFixed(0)} ms (n=${a.n})`,
    )
    const d = summary(during)
    console.log(
      `  uploads under the GET load ${(during.length / loadedSeconds).toFixed(2)} bundles/s, ${((during.length * mb) / loadedSeconds).toFixed(1)} MB/s; one upload p50 ${d.p50.toFixed(0)} ms, max ${d.max.toFixed(0)} ms (n=${d.n})`,
    )
    console.log(`  GET, median of ${PAIRS} rounds of ${GET_MS} ms (each round's p99 in brackets):`)
    line('raw hop (uWS + NATS req/reply)', hop)
    line('GET /v1/skills/{id}, idle', idle)
    line('GET /v1/skills/{id}, uploads running', loaded, idle)
  } finally {
    baseline.stop()
    await stopServer(troupe)
    rmSync(dataDir, { recursive: true, force: true })
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await runSkillServerBench()
