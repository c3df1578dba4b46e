import { execFileSync } from 'node:child_process'
import { chownSync, linkSync, mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import t, { type Test } from 'tap'
import { type OutputFile, WALK_BOUNDS, type WalkOptions, walkOutputs } from '../../actors/workdir/outputs/walk.js'

/**
 * The walk over a session's outputs folder (actors/workdir/outputs/walk.ts): what it hands over and what it refuses,
 * including a folder changed between the listing and the open (through its test hook, so the race is exact).
 */

const SECRET = 'not for the agent\n'

/** A temp dir holding `outputs/` and, beside it, `outside/secret` (what no walk may ever read). */
function tree(t: Test): { root: string; outside: string } {
  const base = mkdtempSync(path.join(os.tmpdir(), 'troupe-walk-'))
  t.teardown(() => rmSync(base, { recursive: true, force: true }))
  const root = path.join(base, 'outputs')
  const outside = path.join(base, 'outside')
  mkdirSync(root)
  mkdirSync(outside)
  writeFileSync(path.join(outside, 'secret'), SECRET)
  return { root, outside }
}

/** Walks `root`, reading every file handed over; what was read by path, and what was skipped by path. */
async function walk(root: string, o: WalkOptions = {}) {
  const read = new Map<string, string>()
  const skipped = new Map<string, string>()
  const { complete } = await walkOutputs(
    root,
    async (f: OutputFile) => {
      const buf = Buffer.alloc(Number(f.stat.size))
      await f.fh.read(buf, 0, buf.length, 0)
      read.set(f.rel, buf.toString())
      return true
    },
    (rel, why) => skipped.set(rel, why),
    o,
  )
  return { read, skipped, complete }
}

t.test('regular files at any depth are handed over; links, FIFOs, sockets and odd names are not', async (t) => {
  const { root, outside } = tree(t)
  mkdirSync(path.join(root, 'a', 'b'), { recursive: true })
  writeFileSync(path.join(root, 'top.txt'), 'top')
  writeFileSync(path.join(root, 'a', 'b', 'deep.bin'), 'deep')
  writeFileSync(path.join(root, 'empty'), '')
  symlinkSync('/etc/passwd', path.join(root, 'passwd'))
  symlinkSync(outside, path.join(root, 'dirlink'))
  symlinkSync('top.txt', path.join(root, 'a', 'relative-link'))
  execFileSync('mkfifo', [path.join(root, 'fifo')])
  const server = createServer()
  await new Promise<void>((r) => server.listen(path.join(root, 'sock'), r))
  t.teardown(() => server.close())
  writeFileSync(Buffer.from(`${root}/bad-\xff-name`, 'latin1'), 'x')

  const { read, skipped, complete } = await walk(root)
  t.same([...read.keys()].sort(), ['a/b/deep.bin', 'empty', 'top.txt'])
  t.equal(read.get('a/b/deep.bin'), 'deep')
  t.equal(skipped.get('passwd'), 'a symbolic link')
  t.equal(skipped.get('dirlink'), 'a symbolic link', 'a symlinked directory is not descended into')
  t.equal(skipped.get('a/relative-link'), 'a symbolic link')
  t.equal(skipped.get('fifo'), 'a FIFO')
  t.equal(skipped.get('sock'), 'a socket')
  t.ok([...skipped.values()].includes('its name is not UTF-8'))
  t.ok(complete)
})

t.test('a missing folder is an empty pass; a folder that is itself a symlink is refused', async (t) => {
  const { root, outside } = tree(t)
  t.same(await walk(path.join(root, 'nope')), { read: new Map(), skipped: new Map(), complete: true })
  const link = path.join(root, 'linked-outputs')
  symlinkSync(outside, link)
  const r = await walk(link)
  t.equal(r.read.size, 0)
  t.equal(r.skipped.get('.'), 'a symbolic link', 'the folder itself')
})

/** Walks a folder holding the agent's `a/secret`, swapping `a` for a symlink to `outside/` just before `when` is opened. */
async function walkSwapping(t: Test, when: string) {
  const { root, outside } = tree(t)
  mkdirSync(path.join(root, 'a'))
  writeFileSync(path.join(root, 'a', 'secret'), 'mine')
  return walk(root, {
    beforeOpen(rel) {
      if (rel !== when) return
      renameSync(path.join(root, 'a'), path.join(root, 'a.old'))
      symlinkSync(outside, path.join(root, 'a'))
    },
  })
}

t.test('a parent directory swapped for a symlink between its listing and its open is refused', async (t) => {
  const r = await walkSwapping(t, 'a')
  t.notOk([...r.read.values()].includes(SECRET), 'nothing outside was read')
  t.equal(r.skipped.get('a'), 'a symbolic link')
})

t.test('a directory swapped after it was opened: its files are read from the directory opened, never through the link', async (t) => {
  const r = await walkSwapping(t, 'a/secret')
  t.equal(r.read.get('a/secret'), 'mine', 'the agent’s own file, from the directory that was listed')
  t.notOk([...r.read.values()].includes(SECRET))
})

t.test('a directory moved out of the folder while walked: its files are refused once opened', async (t) => {
  const { root, outside } = tree(t)
  mkdirSync(path.join(root, 'a'))
  writeFileSync(path.join(root, 'a', 'f'), 'moved away')
  const r = await walk(root, {
    beforeOpen(rel) {
      if (rel === 'a/f') renameSync(path.join(root, 'a'), path.join(outside, 'a'))
    },
  })
  t.equal(r.read.size, 0)
  t.match(r.skipped.get('a/f'), /^not inside the folder once opened \(it is at .*\/outside\/a\/f\)$/)
})

t.test('a file swapped for a FIFO between its listing and its open does not block the walk', async (t) => {
  const { root } = tree(t)
  writeFileSync(path.join(root, 'f'), 'x')
  const r = await walk(root, {
    beforeOpen(rel) {
      if (rel !== 'f') return
      rmSync(path.join(root, 'f'))
      execFileSync('mkfifo', [path.join(root, 'f')])
    },
  })
  t.equal(r.read.size, 0)
  t.equal(r.skipped.get('f'), 'a FIFO')
})

t.test(
  "a file not owned by the folder's owner (a hard link to another user's file) is refused",
  { skip: process.geteuid?.() !== 0 && 'needs root (chown)' },
  async (t) => {
    const { root, outside } = tree(t)
    chownSync(path.join(outside, 'secret'), 4321, 4321)
    linkSync(path.join(outside, 'secret'), path.join(root, 'hard'))
    const r = await walk(root)
    t.equal(r.read.size, 0)
    t.match(r.skipped.get('hard'), /^owned by uid 4321, not by the folder's owner/)
  },
)

t.test('bounds: depth, path length, files and entries per pass', async (t) => {
  const { root } = tree(t)
  mkdirSync(path.join(root, 'd1', 'd2', 'd3'), { recursive: true })
  writeFileSync(path.join(root, 'd1', 'd2', 'in-bounds'), '')
  writeFileSync(path.join(root, 'd1', 'd2', 'd3', 'too-deep'), '')
  writeFileSync(path.join(root, 'x'.repeat(40)), '')
  const deep = await walk(root, { bounds: { ...WALK_BOUNDS, depth: 2, pathBytes: 32 } })
  t.same([...deep.read.keys()], ['d1/d2/in-bounds'])
  t.equal(deep.skipped.get('d1/d2/d3'), 'deeper than 2 levels')
  t.equal(deep.skipped.get('x'.repeat(40)), 'its path is longer than 32 bytes')
  t.ok(deep.complete, 'a skipped path does not make the pass incomplete')

  for (let i = 0; i < 5; i++) writeFileSync(path.join(root, `f${i}`), '')
  const few = await walk(root, { bounds: { ...WALK_BOUNDS, files: 3 } })
  t.equal(few.read.size, 3)
  t.notOk(few.complete, 'a pass stopped at its bound is incomplete')
  const entries = await walk(root, { bounds: { ...WALK_BOUNDS, entries: 2 } })
  t.ok(entries.read.size <= 2)
  t.notOk(entries.complete)
})
