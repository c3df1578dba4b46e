import { mkdir, utimes, writeFile } from 'node:fs/promises'
import path from 'node:path'
import t from 'tap'
import { sandboxFor, text } from './_helpers.js'

async function tree(dir: string, files: Record<string, string | Buffer>): Promise<void> {
  for (const [rel, content] of Object.entries(files)) {
    const abs = path.join(dir, rel)
    await mkdir(path.dirname(abs), { recursive: true })
    await writeFile(abs, content)
  }
}

t.test('glob matches recursively, relative to the root, newest first', async (t) => {
  const { sb, dir } = await sandboxFor(t)
  await tree(dir, {
    'a.ts': '',
    'src/b.ts': '',
    'src/deep/c.ts': '',
    'src/deep/d.js': '',
    'node_modules/pkg/e.ts': '',
    '.git/f.ts': '',
  })
  // Distinct, ordered mtimes: c newest, a oldest.
  const base = Date.now() / 1000 - 1_000
  await utimes(path.join(dir, 'a.ts'), base, base)
  await utimes(path.join(dir, 'src/b.ts'), base + 10, base + 10)
  await utimes(path.join(dir, 'src/deep/c.ts'), base + 20, base + 20)

  const all = await sb.run('glob', { pattern: '**/*.ts' })
  t.equal(all.is_error, false)
  t.equal(text(all), 'src/deep/c.ts\nsrc/b.ts\na.ts')

  t.equal(text(await sb.run('glob', { pattern: '*.ts' })), 'a.ts')
  t.equal(
    text(await sb.run('glob', { pattern: 'src/**/*.{ts,js}' }))
      .split('\n')
      .sort()
      .join(','),
    'src/b.ts,src/deep/c.ts,src/deep/d.js',
  )
  t.equal(text(await sb.run('glob', { pattern: '*.ts', path: 'src/deep' })), 'c.ts')
  t.equal(text(await sb.run('glob', { pattern: 'node_modules/**/*.ts' })), 'node_modules/pkg/e.ts', 'named dirs are searched')
  t.match(text(await sb.run('glob', { pattern: '**/*.py' })), /No files matched/)
})

t.test('glob: absolute pattern, bad root, bad input', async (t) => {
  const { sb, dir } = await sandboxFor(t)
  await tree(dir, { 'x/one.md': '' })
  t.equal(text(await sb.run('glob', { pattern: path.join(dir, 'x', '*.md') })), path.join(dir, 'x', 'one.md'))
  const badRoot = await sb.run('glob', { pattern: '*', path: 'missing' })
  t.equal(badRoot.is_error, true)
  const bad = await sb.run('glob', { pattern: 3 })
  t.equal(bad.is_error, true)
  t.match(text(bad), /Invalid input for glob/)
})

t.test('grep finds regex matches as path:line:text', async (t) => {
  const { sb, dir } = await sandboxFor(t)
  await tree(dir, {
    'a.txt': 'hello world\nnothing\nHELLO again\n',
    'src/b.ts': 'const hello = 1\n',
    'node_modules/x.js': 'hello\n',
    '.git/config': 'hello\n',
    'bin.dat': Buffer.concat([Buffer.from('hello'), Buffer.from([0, 1, 2])]),
  })
  const r = await sb.run('grep', { pattern: 'hel+o' })
  t.equal(r.is_error, false)
  t.equal(text(r), 'a.txt:1:hello world\nsrc/b.ts:1:const hello = 1')

  t.equal(text(await sb.run('grep', { pattern: '[Hh]ELLO|again' })), 'a.txt:3:HELLO again')
  t.equal(text(await sb.run('grep', { pattern: 'hello', path: 'src' })), 'src/b.ts:1:const hello = 1')
  t.equal(text(await sb.run('grep', { pattern: 'hello', path: 'a.txt' })), 'a.txt:1:hello world')
  t.match(text(await sb.run('grep', { pattern: 'zzz' })), /No matches/)
})

t.test('grep errors: invalid regex, missing path', async (t) => {
  const { sb } = await sandboxFor(t)
  const badRe = await sb.run('grep', { pattern: '(' })
  t.equal(badRe.is_error, true)
  t.match(text(badRe), /invalid regular expression/)
  const missing = await sb.run('grep', { pattern: 'x', path: 'nope' })
  t.equal(missing.is_error, true)
  t.match(text(missing), /No such file/)
})

t.test('grep output is capped', async (t) => {
  const { sb, dir } = await sandboxFor(t, { maxOutputChars: 500 })
  await tree(dir, { 'many.txt': Array.from({ length: 300 }, (_, i) => `match ${i}`).join('\n') })
  const out = text(await sb.run('grep', { pattern: 'match' }))
  t.match(out, /\[output truncated: showed 500 of \d+ characters\]$/)
})

t.test('an aborted signal interrupts search tools', async (t) => {
  const { sb, dir } = await sandboxFor(t)
  await tree(dir, { 'a.txt': 'x' })
  const ac = new AbortController()
  ac.abort()
  for (const name of ['glob', 'grep']) {
    const r = await sb.run(name, { pattern: name === 'glob' ? '**' : 'x' }, ac.signal)
    t.equal(r.is_error, true)
    t.match(text(r), /Interrupted/)
  }
})
