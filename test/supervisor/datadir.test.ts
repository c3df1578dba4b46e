// The data directory's lock (supervisor/datadir.ts) in one process: an open file description lock conflicts with
// another taken in the same process, so each case here is a holder and a newcomer.
import t from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import { closeSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { lockDataDir } from '../../supervisor/datadir.js'
import { groupAlive } from '../helpers/troupe.js'

const dataDir = (t: { teardown(fn: () => void): void }) => {
  const d = mkdtempSync(path.join(tmpdir(), 'troupe-lock-'))
  t.teardown(() => rmSync(d, { recursive: true, force: true }))
  return d
}
const lockFile = (dir: string) => path.join(dir, 'troupe.lock')
/** A pid that has certainly exited (spawnSync waited for it). */
const deadPid = () => spawnSync('true').pid
const nameIn = (dir: string, info: object) => writeFileSync(lockFile(dir), JSON.stringify({ role: 'start', started_at: Date.now(), ...info }))

t.test('a live holder is refused and named; once it lets go the directory is free, with the same host id', async (t) => {
  const dir = dataDir(t)
  const a = lockDataDir(dir, 'start')
  a.update({ http_url: 'http://127.0.0.1:1' })
  t.throws(() => lockDataDir(dir, 'serve'), new RegExp(`in use by troupe start \\(pid ${process.pid}, since .*, http://127\\.0\\.0\\.1:1\\)`))
  a.release()
  t.notOk(existsSync(lockFile(dir)), 'released: the lock file is gone')
  const b = lockDataDir(dir, 'serve')
  t.equal(b.hostId, a.hostId, 'the host id stays with the directory')
  t.match(JSON.parse(readFileSync(lockFile(dir), 'utf8')), { pid: process.pid, role: 'serve' })
  b.release()
})

t.test('a lock file nobody holds does not block, whatever process it names', async (t) => {
  const dir = dataDir(t)
  // pid 1 lives; a lock file naming it was not written by a holder that is still there.
  nameIn(dir, { pid: 1 })
  const a = lockDataDir(dir, 'start')
  t.match(JSON.parse(readFileSync(lockFile(dir), 'utf8')), { pid: process.pid })
  a.release()
  nameIn(dir, { pid: deadPid(), nats_pgid: deadPid() })
  lockDataDir(dir, 'start').release()
  t.pass('taken over at once')
})

t.test("a dead holder's child that inherited the lock (its nats-server) is waited for", async (t) => {
  const dir = dataDir(t)
  const a = lockDataDir(dir, 'start')
  const marker = path.join(dir, 'child-exited')
  const child = spawn('sh', ['-c', `sleep 0.3; echo > ${marker}`], { stdio: ['ignore', 'ignore', 'ignore', a.fd] })
  const exited = new Promise((r) => child.once('exit', r))
  // The holder dies: its descriptor closes, its name stays in the file.
  closeSync(a.fd)
  nameIn(dir, { pid: deadPid() })
  const b = lockDataDir(dir, 'start')
  t.ok(existsSync(marker), 'taken only once the child had exited')
  b.release()
  await exited
})

t.test("a dead holder's nats-server that does not stop is killed after 5 s, then the directory is taken", async (t) => {
  const dir = dataDir(t)
  const a = lockDataDir(dir, 'start')
  const stuck = spawn('sleep', ['60'], { stdio: ['ignore', 'ignore', 'ignore', a.fd], detached: true })
  const exited = new Promise((r) => stuck.once('exit', r))
  closeSync(a.fd)
  nameIn(dir, { pid: deadPid(), nats_pgid: stuck.pid })
  const b = lockDataDir(dir, 'start')
  t.notOk(groupAlive(stuck.pid!), 'the stuck group was killed')
  b.release()
  await exited
})
