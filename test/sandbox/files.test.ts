import { mkdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import t from 'tap'
import { sandboxFor, text } from './_helpers.js'

t.test('write creates parent directories and read numbers lines', async (t) => {
  const { sb, dir } = await sandboxFor(t)
  const w = await sb.run('write', { file_path: 'a/b/c.txt', content: 'alpha\nbeta\ngamma\n' })
  t.equal(w.is_error, false)
  t.match(text(w), /Created a\/b\/c\.txt/)
  t.equal(await readFile(path.join(dir, 'a/b/c.txt'), 'utf8'), 'alpha\nbeta\ngamma\n')

  const r = await sb.run('read', { file_path: 'a/b/c.txt' })
  t.equal(r.is_error, false)
  t.equal(text(r), '     1\talpha\n     2\tbeta\n     3\tgamma')

  const again = await sb.run('write', { file_path: path.join(dir, 'a/b/c.txt'), content: 'new' })
  t.match(text(again), /Overwrote/)
  t.equal(text(await sb.run('read', { file_path: 'a/b/c.txt' })), '     1\tnew')
})

t.test('read with view_range', async (t) => {
  const { sb, dir } = await sandboxFor(t)
  await writeFile(path.join(dir, 'n.txt'), Array.from({ length: 10 }, (_, i) => `line ${i + 1}`).join('\n'))
  t.equal(text(await sb.run('read', { file_path: 'n.txt', view_range: [3, 5] })), '     3\tline 3\n     4\tline 4\n     5\tline 5')
  t.equal(text(await sb.run('read', { file_path: 'n.txt', view_range: [9, -1] })), '     9\tline 9\n    10\tline 10')
  t.equal(text(await sb.run('read', { file_path: 'n.txt', view_range: [10, 99] })), '    10\tline 10')

  const beyond = await sb.run('read', { file_path: 'n.txt', view_range: [11, -1] })
  t.equal(beyond.is_error, true)
  t.match(text(beyond), /only 10 lines/)

  for (const bad of [[0, 3], [5, 2], [1], 'all', [1.5, 2]]) {
    const r = await sb.run('read', { file_path: 'n.txt', view_range: bad })
    t.equal(r.is_error, true, JSON.stringify(bad))
    t.match(text(r), /Invalid input for read/)
  }
})

t.test('read lists a directory', async (t) => {
  const { sb, dir } = await sandboxFor(t)
  await mkdir(path.join(dir, 'sub'))
  await writeFile(path.join(dir, 'b.txt'), '')
  await writeFile(path.join(dir, 'a.txt'), '')
  const r = await sb.run('read', { file_path: '.' })
  t.equal(r.is_error, false)
  // outputs/ is the local backend's outputs folder, made with the sandbox.
  t.equal(text(r), 'a.txt\nb.txt\noutputs/\nsub/')
})

t.test('read errors: missing, binary; empty file is fine', async (t) => {
  const { sb, dir } = await sandboxFor(t)
  const missing = await sb.run('read', { file_path: 'nope.txt' })
  t.equal(missing.is_error, true)
  t.match(text(missing), /No such file or directory: .*nope\.txt/)

  await writeFile(path.join(dir, 'bin.dat'), Buffer.from([1, 2, 0, 3]))
  const bin = await sb.run('read', { file_path: 'bin.dat' })
  t.equal(bin.is_error, true)
  t.match(text(bin), /binary/)

  await writeFile(path.join(dir, 'empty.txt'), '')
  const empty = await sb.run('read', { file_path: 'empty.txt' })
  t.equal(empty.is_error, false)
  t.match(text(empty), /empty/)
})

t.test('read caps long files and says where to continue', async (t) => {
  const { sb, dir } = await sandboxFor(t, { maxOutputChars: 200 })
  await writeFile(path.join(dir, 'long.txt'), Array.from({ length: 100 }, (_, i) => `row ${i + 1}`).join('\n'))
  const r = await sb.run('read', { file_path: 'long.txt' })
  t.equal(r.is_error, false)
  const out = text(r)
  t.match(out, /\[output truncated: showed \d+ characters \(lines 1-\d+\); use view_range starting at line \d+ to read more\]$/)
  t.ok(out.length < 400)

  await writeFile(path.join(dir, 'wide.txt'), 'x'.repeat(5_000))
  const wide = text(await sb.run('read', { file_path: 'wide.txt' }))
  t.match(wide, /line 1 is longer than the limit/)
  t.ok(wide.length < 400)
})

t.test('edit: single replacement', async (t) => {
  const { sb, dir } = await sandboxFor(t)
  const file = path.join(dir, 'e.txt')
  await writeFile(file, 'one two three\n')
  const r = await sb.run('edit', { file_path: 'e.txt', old_string: 'two', new_string: '$& 2 $1' })
  t.equal(r.is_error, false)
  t.match(text(r), /Replaced 1 occurrence in e\.txt/)
  t.equal(await readFile(file, 'utf8'), 'one $& 2 $1 three\n', 'replacement is literal')
})

t.test('edit: ambiguous match is refused with a count', async (t) => {
  const { sb, dir } = await sandboxFor(t)
  const file = path.join(dir, 'e.txt')
  await writeFile(file, 'x = 1\nx = 1\nx = 1\n')
  const r = await sb.run('edit', { file_path: 'e.txt', old_string: 'x = 1', new_string: 'x = 2' })
  t.equal(r.is_error, true)
  t.match(text(r), /occurs 3 times/)
  t.equal(await readFile(file, 'utf8'), 'x = 1\nx = 1\nx = 1\n', 'file untouched')
})

t.test('edit: replace_all', async (t) => {
  const { sb, dir } = await sandboxFor(t)
  const file = path.join(dir, 'e.txt')
  await writeFile(file, 'aXbXc')
  const r = await sb.run('edit', { file_path: 'e.txt', old_string: 'X', new_string: '--', replace_all: true })
  t.equal(r.is_error, false)
  t.match(text(r), /Replaced 2 occurrences/)
  t.equal(await readFile(file, 'utf8'), 'a--b--c')
})

t.test('edit: missing string, missing file, bad input', async (t) => {
  const { sb, dir } = await sandboxFor(t)
  await writeFile(path.join(dir, 'e.txt'), 'hello')
  const notFound = await sb.run('edit', { file_path: 'e.txt', old_string: 'bye', new_string: 'x' })
  t.equal(notFound.is_error, true)
  t.match(text(notFound), /not found/)

  const noFile = await sb.run('edit', { file_path: 'nope.txt', old_string: 'a', new_string: 'b' })
  t.equal(noFile.is_error, true)
  t.match(text(noFile), /No such file/)

  for (const bad of [
    { file_path: 'e.txt', old_string: '', new_string: 'x' },
    { file_path: 'e.txt', old_string: 'hello', new_string: 'hello' },
    { file_path: 'e.txt', old_string: 'hello' },
    { file_path: 'e.txt', old_string: 'hello', new_string: 'x', replace_all: 'yes' },
  ]) {
    const r = await sb.run('edit', bad)
    t.equal(r.is_error, true, JSON.stringify(bad))
    t.match(text(r), /Invalid input for edit/)
  }
  t.equal(await readFile(path.join(dir, 'e.txt'), 'utf8'), 'hello')
})

t.test('write: bad input and writing over a directory', async (t) => {
  const { sb, dir } = await sandboxFor(t)
  t.match(text(await sb.run('write', { file_path: 'x.txt' })), /Invalid input for write: "content"/)
  t.match(text(await sb.run('write', { content: 'x' })), /Invalid input for write: "file_path"/)
  await mkdir(path.join(dir, 'd'))
  const r = await sb.run('write', { file_path: 'd', content: 'x' })
  t.equal(r.is_error, true)
  t.match(text(r), /Is a directory/)
})
