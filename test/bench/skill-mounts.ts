// `npm run bench -- skill-mounts`: a session's skill put in place (actors/workdir/skills/mounts.ts) from a 1,000-file
// bundle of 25 MB in the bundles' object store (one nats-server of its own): read from the store, unpacked into a
// session directory, renamed into place. Meanwhile this thread plays the host: a local HTTP server answers trivial
// GETs one after another and the event loop's delay is sampled. Unpacking on the pool's worker thread (as the server
// does) beside unpacking on this thread (`unpackSkill` inline), for what the worker spares the loop.
// Run alone: node --import tsx test/bench/skill-mounts.ts
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { Objm } from '@nats-io/obj'
import { connect } from '@nats-io/transport-node'
import pino from 'pino'
import { fileBytes } from '../../actors/file/bytes.js'
import { openObjectStore } from '../../actors/kit/object-stores.js'
import { SkillMounts, type Unpack } from '../../actors/workdir/skills/mounts.js'
import { unpackOffThread } from '../../actors/workdir/skills/unpack-pool.js'
import { unpackSkill } from '../../actors/workdir/skills/unpack.js'
import { ObjectStores } from '../../protocol/subjects.js'
import { startNats } from '../helpers/nats.js'
import { makeBundle, probe } from './skill-bundle.js'

const ROUNDS = Number(process.env.BENCH_SKILL_ROUNDS ?? 3)
const NAME = 'bench-skill'

export async function runSkillMountBench(): Promise<void> {
  // The server below is unref'd (as in tests): hold the process open while it waits on it.
  const hold = setInterval(() => undefined, 1000)
  const nats = await startNats()
  const nc = await connect({ servers: nats.url })
  const root = mkdtempSync(path.join(tmpdir(), 'troupe-bench-skills-'))
  try {
    const js = jetstream(nc)
    const log = pino({ level: 'warn' })
    const os = await openObjectStore(new Objm(js), { jsm: await jetstreamManager(nc), replicas: 1, lowerReplicas: false, log }, ObjectStores.skills)
    const bundles = fileBytes(js, ObjectStores.skills)
    console.log(`\nskill-mounts: a 1,000-file, 25 MB bundle put in place for a session; this thread serves GETs meanwhile`)
    const idle = await probe(new Promise((r) => setTimeout(r, 2000)))
    console.log(`  idle: GET p99 ${idle.get.p99.toFixed(2)} ms, loop delay p99 ${idle.loopP99.toFixed(1)} ms max ${idle.loopMax.toFixed(1)} ms`)
    for (const [variant, incompressible] of [
      ['incompressible (random bytes)', true],
      ['text (deflates ~3×)', false],
    ] as const) {
      const zip = await makeBundle(incompressible)
      const object = `bench.${incompressible ? 'random' : 'text'}`
      await os.putBlob({ name: object }, zip)
      console.log(`  ${variant}: ${(zip.length / 1e6).toFixed(1)} MB zipped`)
      for (const [how, unpack] of [
        ['worker thread', unpackOffThread],
        ['this thread ', (task) => unpackSkill(task)],
      ] as Array<[string, Unpack]>) {
        const times: number[] = []
        let worst = { loopP99: 0, loopMax: 0, getP99: 0 }
        for (let i = 0; i < ROUNDS; i++) {
          const dir = path.join(root, `${object}-${how.trim()}-${i}`)
          const mounts = new SkillMounts('sesn_bench', dir, bundles, log, unpack)
          const t0 = performance.now()
          const work = mounts.ready([{ name: NAME, object }]).then((r) => {
            if (r) throw new Error(r.content[0]!.text)
            times.push(performance.now() - t0)
          })
          const p = await probe(work)
          await work
          worst = { loopP99: Math.max(worst.loopP99, p.loopP99), loopMax: Math.max(worst.loopMax, p.loopMax), getP99: Math.max(worst.getP99, p.get.p99) }
          rmSync(dir, { recursive: true, force: true })
        }
        const ms = times.map((t) => t.toFixed(0)).join(', ')
        console.log(
          `    ${how}: ${ms} ms; loop delay p99 ${worst.loopP99.toFixed(1)} ms, max ${worst.loopMax.toFixed(1)} ms; GET p99 ${worst.getP99.toFixed(2)} ms (worst of ${ROUNDS})`,
        )
      }
    }
  } finally {
    await nc.close()
    await nats.stop()
    rmSync(root, { recursive: true, force: true })
    clearInterval(hold)
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await runSkillMountBench()
  // The unpack pool's idle worker would hold the process for its idle time.
  process.exit(0)
}
