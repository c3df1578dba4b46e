// Issue 21, point 1: a crashed server restarts at once. `npm start` runs as a supervisor runs it (its own process
// group: npm, sh, node); the group is killed and started again at once on the same data directory. The killed
// node's parent dies with it, so it is a zombie until something reaps it: the data directory's lock must not take
// that for a live holder.
import type { Test } from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { clientFor, raw, startTroupe, type TroupeProcess } from './troupe.js'
import { until } from './wait.js'

/** A data directory removed when `t` ends. */
export function crashDir(t: Test): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'troupe-crash-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** `npm start` on `dir` in a process group of its own, killed (the group) when `t` ends. */
export async function startSupervised(t: Test, dir: string): Promise<TroupeProcess> {
  const p = await startTroupe({ command: ['npm', 'start', '--silent'], env: { TROUPE_DATA_DIR: dir, NATS_URL: '' } })
  t.teardown(() => p.killNow())
  return p
}

/**
 * `rounds` starts in a row on one directory, each crashed by `crash` once it has made an agent: every start must
 * succeed, be ready, and find every agent made before it.
 */
export async function crashLoop(t: Test, dir: string, crash: (p: TroupeProcess) => Promise<void>, rounds = 20): Promise<void> {
  const made: string[] = []
  for (let round = 1; round <= rounds; round++) {
    const p = await startSupervised(t, dir).catch((err: Error) => {
      throw new Error(`start ${round} failed: ${err.message}`)
    })
    await until('ready', async () => (await raw(p.url, 'GET', '/readyz')).status === 200, 15_000)
    const client = clientFor(p.url)
    const found = await Promise.all(
      made.map((id) =>
        client.beta.agents.retrieve(id).then(
          (a) => a.id,
          (e) => `error ${e.status}`,
        ),
      ),
    )
    t.same(found, made, `start ${round}: up, and every agent made before is there`)
    made.push((await client.beta.agents.create({ name: `round-${round}`, model: 'claude-sonnet-4-5' })).id)
    await crash(p)
  }
}
