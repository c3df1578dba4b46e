import { execFileSync } from 'node:child_process'
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { readAll, WorkspaceDir } from '../../actors/workdir/workspace/files.js'

/**
 * Reading and writing a workspace the agent controls, as a server that may be root: links are kept as links and never
 * followed, a file reached through a link is never read, special files are left out, the bounds stop the scan, and
 * what is written back never goes through what is already there.
 */

const root = mkdtempSync(path.join(os.tmpdir(), 'troupe-wsdir-'))
const outside = mkdtempSync(path.join(os.tmpdir(), 'troupe-wsdir-outside-'))
writeFileSync(path.join(outside, 'secret'), 'host secret')
mkdirSync(path.join(root, 'sub'))
writeFileSync(path.join(root, 'sub', 'f.txt'), 'inside')
chmodSync(path.join(root, 'sub', 'f.txt'), 0o640)
symlinkSync(path.join(outside, 'secret'), path.join(root, 'to-secret'))
symlinkSync(outside, path.join(root, 'to-outside'))
execFileSync('mkfifo', [path.join(root, 'fifo')])
const bounds = { maxEntries: 100, maxBytes: 1 << 20 }

t.test('links are entries of their own; nothing behind them is read; special files are left out', async (t) => {
  const scan = await new WorkspaceDir(root).scan(bounds)
  t.same([...scan.entries.keys()].sort(), ['sub', 'sub/f.txt', 'to-outside', 'to-secret'], 'the link to a directory is not walked, the FIFO is not listed')
  t.same(scan.entries.get('to-secret'), { t: 'l', target: path.join(outside, 'secret') })
  t.match(scan.entries.get('sub/f.txt'), { t: 'f', mode: 0o640, size: 6 })
  t.equal(scan.bytes, 6)
})

t.test('a file is opened only at exactly its path inside the workspace', async (t) => {
  const dir = new WorkspaceDir(root)
  const ok = await dir.openFile('sub/f.txt')
  t.ok(ok)
  const bytes: Buffer[] = []
  for await (const c of readAll(ok!.fh)) bytes.push(Buffer.from(c))
  await ok!.fh.close()
  t.equal(Buffer.concat(bytes).toString(), 'inside')
  t.equal(await dir.openFile('to-secret'), undefined, 'a link is not opened (O_NOFOLLOW)')
  t.equal(await dir.openFile('to-outside/secret'), undefined, 'nor a file reached through a linked directory (/proc/self/fd says where it is)')
  t.equal(await dir.openFile('fifo'), undefined, 'a FIFO is not opened for reading (it would block)')
  t.equal(await dir.openFile('sub'), undefined, 'a directory is not a file')
})

t.test('the scan stops past the bounds', async (t) => {
  t.equal((await new WorkspaceDir(root).scan({ maxEntries: 2, maxBytes: 1 << 20 })).over, 'entries')
  t.equal((await new WorkspaceDir(root).scan({ maxEntries: 100, maxBytes: 3 })).over, 'bytes')
})

t.test('skipped top-level names are neither read nor owned', async (t) => {
  const dir = new WorkspaceDir(root, new Set(['sub']))
  t.same([...(await dir.scan(bounds)).entries.keys()].sort(), ['to-outside', 'to-secret'])
  t.notOk(dir.owns('sub/f.txt'))
  t.ok(dir.owns('subway'))
})

t.test('writing back replaces what is there without writing through it, with the mode and mtime saved', async (t) => {
  const dir = new WorkspaceDir(root)
  // A link where a file is to be restored: the link is replaced, its target untouched.
  symlinkSync(path.join(outside, 'secret'), path.join(root, 'restored'))
  const mtime = Date.parse('2024-03-05T06:07:08.123Z')
  await dir.writeFile('restored', { t: 'f', mode: 0o600, size: 3, mtime }, [Buffer.from('new')] as any)
  t.equal(readFileSync(path.join(outside, 'secret'), 'utf8'), 'host secret', 'the link target is untouched')
  const st = lstatSync(path.join(root, 'restored'))
  t.ok(st.isFile())
  t.equal(st.mode & 0o777, 0o600)
  t.equal(Math.floor(st.mtimeMs), mtime, 'the mtime reads back to the millisecond, so the next scan sees no change')
  t.match((await dir.scan(bounds)).entries.get('restored'), { t: 'f', mode: 0o600, size: 3, mtime })
  await dir.writeLink('restored', 'elsewhere')
  t.equal(lstatSync(path.join(root, 'restored')).isSymbolicLink(), true)
})
