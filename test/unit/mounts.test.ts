import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import pino from 'pino'
import t from 'tap'
import { Mounts } from '../../actors/workdir/mounts.js'
import { copyIdOf } from '../../actors/file/index.js'
import type { FileResource } from '../../protocol/schemas/resource.js'

/**
 * Mounts without a server: a session's file resources put in its directory's uploads/ from a store of bytes, the
 * manifest that lets a later pass (another actor, after a crash) finish or undo what an earlier one did.
 */

const SESSION = 'sesn_01MOUNTS'
const log = pino({ level: 'silent' })
const resource = (id: string, mountPath: string): FileResource => ({
  id,
  type: 'file',
  file_id: 'file_src',
  mount_path: `/mnt/session/uploads/${mountPath}`,
  created_at: '',
  updated_at: '',
})

function setup() {
  const root = mkdtempSync(path.join(os.tmpdir(), 'troupe-mounts-'))
  const session = { id: SESSION, resources: [] as FileResource[] }
  const bytes = new Map<string, Buffer>()
  let failing = false
  const reads: string[] = []
  const files = {
    async read(id: string) {
      reads.push(id)
      if (failing) throw new Error('store unavailable')
      const b = bytes.get(id)
      if (!b) return undefined
      // In two pieces, as the store hands chunks over.
      return (async function* () {
        yield b.subarray(0, 3)
        yield b.subarray(3)
      })()
    },
  }
  // Each pass is given the session's resources as they are then, as the actor does.
  const mounts = () => {
    const m = new Mounts(SESSION, root, files, log)
    return { ready: (signal?: AbortSignal) => m.ready(session.resources, signal) }
  }
  const put = (r: FileResource, text: string) => {
    bytes.set(copyIdOf(SESSION, r.id), Buffer.from(text))
    session.resources = [...session.resources, r]
  }
  const at = (rel: string) => path.join(root, 'uploads', rel)
  return { root, session, bytes, files, mounts, put, at, reads, fail: (f: boolean) => (failing = f) }
}

t.test('files go to their mount paths, read-only, written once; the next pass with nothing changed reads nothing', async (t) => {
  const m = setup()
  m.put(resource('sesrsc_a', 'a.txt'), 'alpha')
  m.put(resource('sesrsc_b', 'deep/er/b.bin'), 'beta!')
  const mounts = m.mounts()
  t.equal(await mounts.ready(), undefined)
  t.equal(readFileSync(m.at('a.txt'), 'utf8'), 'alpha')
  t.equal(readFileSync(m.at('deep/er/b.bin'), 'utf8'), 'beta!')
  t.equal(statSync(m.at('a.txt')).mode & 0o777, 0o444)
  t.equal(m.reads.length, 2)
  await mounts.ready()
  t.equal(m.reads.length, 2, 'nothing changed: nothing read')
  // Another actor (passivated and loaded again) checks the disk against the manifest and reads nothing either.
  await m.mounts().ready()
  t.equal(m.reads.length, 2)
  t.notOk(existsSync(path.join(m.root, 'uploads', '.uploads.json')), 'the manifest is outside uploads/')
})

t.test('a deleted resource goes with its emptied directories; a path taken again gets the new copy', async (t) => {
  const m = setup()
  m.put(resource('sesrsc_a', 'x/y/a.txt'), 'first')
  m.put(resource('sesrsc_b', 'b.txt'), 'other')
  const mounts = m.mounts()
  await mounts.ready()
  m.session.resources = m.session.resources.filter((r) => r.id !== 'sesrsc_a')
  await mounts.ready()
  t.notOk(existsSync(m.at('x')), 'x/y/a.txt and its directories gone')
  t.ok(existsSync(m.at('b.txt')))
  // A file where a directory was, and a different copy at a path used before.
  m.put(resource('sesrsc_c', 'x'), 'a file now')
  m.session.resources = m.session.resources.filter((r) => r.id !== 'sesrsc_b')
  m.put(resource('sesrsc_d', 'b.txt'), 'replaced')
  await mounts.ready()
  t.equal(readFileSync(m.at('x'), 'utf8'), 'a file now')
  t.equal(readFileSync(m.at('b.txt'), 'utf8'), 'replaced')
})

t.test('a pass cut short is finished by the next: files the manifest names but the disk lacks are written', async (t) => {
  const m = setup()
  m.put(resource('sesrsc_a', 'a.txt'), 'alpha')
  await m.mounts().ready()
  // As if the host died after the manifest was written and before the rename.
  const { rmSync } = await import('node:fs')
  rmSync(m.at('a.txt'))
  await m.mounts().ready()
  t.equal(readFileSync(m.at('a.txt'), 'utf8'), 'alpha')
})

t.test('a read that fails answers the tool with an error and is tried again; a copy that is gone is skipped', async (t) => {
  const m = setup()
  m.put(resource('sesrsc_a', 'a.txt'), 'alpha')
  const mounts = m.mounts()
  m.fail(true)
  const refused = await mounts.ready()
  t.equal(refused?.is_error, true)
  t.match(refused?.content[0]?.text, /could not be put in place under \/mnt\/session\/uploads \(store unavailable\); the tool did not run/)
  m.fail(false)
  t.equal(await mounts.ready(), undefined, 'tried again at the next tool')
  t.equal(readFileSync(m.at('a.txt'), 'utf8'), 'alpha')
  m.session.resources = [...m.session.resources, resource('sesrsc_gone', 'gone.txt')]
  t.equal(await mounts.ready(), undefined, 'a copy deleted through the Files API: no file, no error')
  t.notOk(existsSync(m.at('gone.txt')))
})

t.test('a manifest entry outside uploads/ is never removed', async (t) => {
  const m = setup()
  const outside = path.join(m.root, 'precious.txt')
  writeFileSync(outside, 'keep')
  writeFileSync(path.join(m.root, '.uploads.json'), JSON.stringify({ '../precious.txt': 'file_x' }))
  await m.mounts().ready()
  t.equal(readFileSync(outside, 'utf8'), 'keep')
})
