import { randomBytes } from 'node:crypto'
import { crc32, deflateRawSync, constants as zlib } from 'node:zlib'
import JSZip from 'jszip'
import t, { type Test } from 'tap'
import { type BundleInput, type BundleResult, CANONICAL_DATE, validateBundle } from '../../gateway/skill-bundle.js'
import {
  descriptionProblem,
  nameProblem,
  normalizeSkillDirName,
  SKILL_MAX_EXPANDED_BYTES,
  SKILL_MAX_FILES,
  SKILL_UPLOAD_MAX_BYTES,
} from '../../protocol/skill-rules.js'

/**
 * The skill bundle validator (gateway/skill-bundle.ts) called directly. Ordinary bundles are built with jszip; the
 * hostile shapes jszip cannot write (two entries of one name, an empty name, sizes and CRCs that lie, entries sharing
 * data) with the small raw writer below.
 */

const enc = (s: string) => new TextEncoder().encode(s)
const skillMd = (name = 'my-skill', description = 'Does useful things.') => `---\nname: ${name}\ndescription: ${description}\n---\n# ${name}\n\nBody.\n`

type Content = string | Uint8Array
/** A zip of these entries; an entry given as `[content, options]` gets its own options besides `opts`. */
async function zipOf(
  entries: Record<string, Content | [Content, JSZip.JSZipFileOptions]>,
  opts: JSZip.JSZipFileOptions = {},
  gen: Omit<JSZip.JSZipGeneratorOptions, 'type'> = {},
): Promise<Uint8Array> {
  const z = new JSZip()
  for (const [path, value] of Object.entries(entries)) {
    const [data, own] = Array.isArray(value) ? value : [value, {}]
    z.file(path, data, { createFolders: false, ...opts, ...own })
  }
  return z.generateAsync({ compression: 'DEFLATE', ...gen, type: 'uint8array' })
}

interface RawEntry {
  name: string
  data: Uint8Array
  method?: number
  /** Stored data as given; deflated otherwise (method 8, the default). */
  compressed?: Uint8Array
  size?: number
  crc?: number
  flags?: number
  madeBy?: number
  attrs?: number
  /** This entry's central record points at entry n's local header. */
  sameDataAs?: number
}

/** A zip written byte by byte, saying whatever the test wants it to say. */
function rawZip(entries: RawEntry[]): Uint8Array {
  const locals: Buffer[] = []
  const centrals: Buffer[] = []
  const offsets: number[] = []
  let offset = 0
  entries.forEach((e, i) => {
    const name = Buffer.from(e.name)
    const method = e.method ?? 8
    const body = Buffer.from(e.compressed ?? (method === 8 ? deflateRawSync(e.data) : e.data))
    const crc = e.crc ?? crc32(e.data)
    const size = e.size ?? e.data.byteLength
    // The local header and the central record share these fields, the central record's two bytes further on.
    const shared = (header: Buffer, at: number) => {
      header.writeUInt16LE(e.flags ?? 0, at)
      header.writeUInt16LE(method, at + 2)
      header.writeUInt32LE(crc, at + 8)
      header.writeUInt32LE(body.length, at + 12)
      header.writeUInt32LE(size, at + 16)
      header.writeUInt16LE(name.length, at + 20)
    }
    const local = Buffer.alloc(30)
    local.writeUInt32LE(0x04034b50, 0)
    local.writeUInt16LE(20, 4)
    shared(local, 6)
    offsets.push(offset)
    if (e.sameDataAs === undefined) {
      locals.push(local, name, body)
      offset += 30 + name.length + body.length
    }
    const central = Buffer.alloc(46)
    central.writeUInt32LE(0x02014b50, 0)
    central.writeUInt16LE(((e.madeBy ?? 3) << 8) | 20, 4)
    central.writeUInt16LE(20, 6)
    shared(central, 8)
    central.writeUInt32LE(e.attrs ?? (0o100644 << 16) >>> 0, 38)
    central.writeUInt32LE(e.sameDataAs === undefined ? offsets[i]! : offsets[e.sameDataAs]!, 42)
    centrals.push(central, name)
  })
  const cd = Buffer.concat(centrals)
  const eocd = Buffer.alloc(22)
  eocd.writeUInt32LE(0x06054b50, 0)
  eocd.writeUInt16LE(entries.length, 8)
  eocd.writeUInt16LE(entries.length, 10)
  eocd.writeUInt32LE(cd.length, 12)
  eocd.writeUInt32LE(offset, 16)
  return new Uint8Array(Buffer.concat([...locals, cd, eocd]))
}

const good = { name: 'my-skill/SKILL.md', data: enc(skillMd()) }
/** A valid SKILL.md and one more part, as path-qualified files. */
const filesWith = (path: string, bytes = enc('')): BundleInput => ({
  files: [
    { path: good.name, bytes: good.data },
    { path, bytes },
  ],
})
/** A valid SKILL.md and one more entry with this unix mode, zipped by jszip. */
const zipWithMode = async (path: string, mode: number) =>
  ({ zip: await zipOf({ 'my-skill/SKILL.md': skillMd(), [path]: ['', { unixPermissions: mode }] }, {}, { platform: 'UNIX' }) }) satisfies BundleInput

async function refused(t: Test, input: BundleInput, rule: string, path?: string): Promise<void> {
  const r = await validateBundle(input)
  t.equal(r.ok, false, `refused as ${rule}`)
  if (r.ok) return
  t.equal(r.rule, rule, r.message)
  if (path !== undefined) {
    t.equal(r.path, path)
    t.match(r.message, JSON.stringify(path), 'the message names the path')
  }
}

const ok = (r: BundleResult) => {
  if (!r.ok) throw new Error(`refused: ${r.rule}: ${r.message}`)
  return r
}

t.test('name and description rules, as the vendor publishes them', async (t) => {
  t.equal(nameProblem('my-skill-2'), undefined)
  t.equal(nameProblem('a'.repeat(64)), undefined)
  t.match(nameProblem('a'.repeat(65)), /`name` must be at most 64 characters/)
  t.match(nameProblem('My-Skill'), /`name` may contain only lowercase letters, digits and hyphens/)
  t.match(nameProblem('my_skill'), /only lowercase letters, digits and hyphens/)
  t.match(nameProblem('café'), /only lowercase letters/)
  t.match(nameProblem('<b>x</b>'), /`name` must not contain XML tags/)
  t.match(nameProblem('claude-helper'), /`name` must not contain the reserved word "claude"/)
  t.match(nameProblem('my-anthropic-tools'), /reserved word "anthropic"/)
  t.match(nameProblem(''), /`name` is required/)
  t.match(nameProblem(42), /`name` is required and must be a non-empty string/)
  t.match(nameProblem(undefined), /`name` is required/)

  t.equal(descriptionProblem('Use when the user asks for x < y and y > z.'), undefined)
  t.equal(descriptionProblem('é'.repeat(1024)), undefined, 'characters are code points')
  t.equal(descriptionProblem('😀'.repeat(1024)), undefined, 'an astral character counts once')
  t.match(descriptionProblem('x'.repeat(1025)), /`description` must be at most 1024 characters/)
  t.match(descriptionProblem('   '), /`description` must be non-empty/)
  t.match(descriptionProblem('Use <example>this</example>'), /`description` must not contain XML tags/)
  t.match(descriptionProblem('line<br/>break'), /XML tags/)
  t.match(descriptionProblem(['x']), /`description` is required and must be a string/)

  t.equal(normalizeSkillDirName('My_Skill'), 'my-skill')
})

t.test('a bundle is accepted, re-rooted under its name and returned with its SKILL.md', async (t) => {
  const zip = await zipOf({ 'My_Skill/SKILL.md': skillMd(), 'My_Skill/scripts/run.py': 'print(1)\n', 'My_Skill/ref/a.md': 'A' })
  const r = ok(await validateBundle({ zip }))
  t.equal(r.name, 'my-skill')
  t.equal(r.description, 'Does useful things.')
  t.equal(r.files, 3)
  t.equal(r.expandedBytes, enc(skillMd()).length + 'print(1)\n'.length + 1)
  t.equal(r.skillMd, skillMd())
  const back = await JSZip.loadAsync(r.zip)
  t.same(Object.keys(back.files), ['my-skill/SKILL.md', 'my-skill/ref/a.md', 'my-skill/scripts/run.py'], 'sorted, re-rooted, no directory entries')
  for (const f of Object.values(back.files)) {
    t.equal(f.date.getTime(), CANONICAL_DATE.getTime())
    t.equal(f.unixPermissions, 0o100644)
  }
  t.equal(await back.file('my-skill/scripts/run.py')!.async('string'), 'print(1)\n')
})

t.test('the canonical zip is the same bytes whatever the input order, timestamps, compression, or form', async (t) => {
  const noise = new Uint8Array(randomBytes(20_000))
  const content: Record<string, Content> = {
    'my-skill/SKILL.md': skillMd(),
    'my-skill/b/x.txt': 'x'.repeat(5000),
    'my-skill/a.txt': 'aaa',
    'my-skill/img.png': noise,
  }
  const reversed = Object.fromEntries(Object.entries(content).reverse())
  const a = ok(await validateBundle({ zip: await zipOf(content, { date: new Date('2020-05-05T10:00:00Z') }) }))
  const b = ok(await validateBundle({ zip: await zipOf(reversed, { date: new Date('2011-01-01T00:00:00Z') }, { compression: 'STORE' }) }))
  const c = ok(await validateBundle({ zip: await zipOf(content, { unixPermissions: 0o100755 }, { compressionOptions: { level: 9 }, platform: 'DOS' }) }))
  const withDirs = new JSZip()
  for (const [p, d] of Object.entries(reversed)) withDirs.file(p, d, { createFolders: true })
  const d = ok(await validateBundle({ zip: await withDirs.generateAsync({ type: 'uint8array' }) }))
  const e = ok(await validateBundle({ files: Object.entries(reversed).map(([path, s]) => ({ path, bytes: typeof s === 'string' ? enc(s) : s })) }))
  const f = ok(
    await validateBundle({ zip: await zipOf(Object.fromEntries(Object.entries(content).map(([p, d]) => [p.replace('my-skill/', 'My_Skill/'), d]))) }),
  )
  for (const [label, other] of [
    ['reversed, stored, other dates', b],
    ['level 9, DOS, other modes', c],
    ['with directory entries', d],
    ['as files[]', e],
    ['under My_Skill/', f],
  ] as const)
    t.ok(Buffer.from(a.zip).equals(Buffer.from(other.zip)), label)
  const g = ok(await validateBundle({ zip: await zipOf({ ...content, 'my-skill/a.txt': 'aab' }) }))
  t.notOk(Buffer.from(a.zip).equals(Buffer.from(g.zip)), 'different content, different bytes')
  const back = await JSZip.loadAsync(a.zip)
  t.equal((await back.file('my-skill/img.png')!.async('uint8array')).length, noise.length)
  t.ok(a.zip.byteLength > noise.length, 'random bytes are stored, not deflated')
  t.ok(Buffer.from(a.zip).includes(Buffer.from(noise)), 'stored verbatim')
})

t.test('executable files keep their bit: 0755 where a Unix-made entry has one, 0644 everywhere else', async (t) => {
  const content = { 'my-skill/SKILL.md': skillMd(), 'my-skill/scripts/run.sh': '#!/bin/sh\necho hi\n', 'my-skill/ref.md': 'r' }
  const modes = async (r: BundleResult) => {
    const back = await JSZip.loadAsync(ok(r).zip)
    return Object.fromEntries(Object.values(back.files).map((f) => [f.name, f.unixPermissions]))
  }
  const exec = (mode: number) => ({
    'my-skill/scripts/run.sh': [content['my-skill/scripts/run.sh'], { unixPermissions: mode }] as [Content, JSZip.JSZipFileOptions],
  })
  const unix = await validateBundle({ zip: await zipOf({ ...content, ...exec(0o100755) }, { unixPermissions: 0o100644 }, { platform: 'UNIX' }) })
  t.same(await modes(unix), { 'my-skill/SKILL.md': 0o100644, 'my-skill/ref.md': 0o100644, 'my-skill/scripts/run.sh': 0o100755 })
  const userOnly = await validateBundle({ zip: await zipOf({ ...content, ...exec(0o100700) }, { unixPermissions: 0o100600 }, { platform: 'UNIX' }) })
  t.same(await modes(userOnly), await modes(unix), 'any execute bit makes 0755; the rest is canonical')
  t.ok(Buffer.from(ok(userOnly).zip).equals(Buffer.from(ok(unix).zip)), 'the same bytes')
  const plain = await validateBundle({ zip: await zipOf(content, { unixPermissions: 0o100644 }, { platform: 'UNIX' }) })
  t.equal((await modes(plain))['my-skill/scripts/run.sh'], 0o100644)
  t.notOk(Buffer.from(ok(plain).zip).equals(Buffer.from(ok(unix).zip)), 'a mode is part of the content')
  const dos = await validateBundle({ zip: await zipOf({ ...content, ...exec(0o100755) }, {}, { platform: 'DOS' }) })
  t.equal((await modes(dos))['my-skill/scripts/run.sh'], 0o100644, 'a DOS-made entry has no Unix mode')
  const files = await validateBundle({ files: Object.entries(content).map(([path, x]) => ({ path, bytes: enc(x) })) })
  t.ok(Buffer.from(ok(files).zip).equals(Buffer.from(ok(plain).zip)), 'files[] parts carry no mode: 0644')
})

t.test('path rules name the offending path', async (t) => {
  const md = { 'my-skill/SKILL.md': skillMd() }
  await refused(t, { zip: await zipOf({ ...md, 'my-skill/../evil.txt': 'x' }) }, 'traversal', 'my-skill/../evil.txt')
  await refused(t, { zip: await zipOf({ ...md, '/etc/evil.txt': 'x' }) }, 'absolute', '/etc/evil.txt')
  await refused(t, { zip: await zipOf({ ...md, 'C:/evil.txt': 'x' }) }, 'absolute', 'C:/evil.txt')
  await refused(t, { zip: await zipOf({ ...md, 'my-skill\\evil.txt': 'x' }) }, 'backslash', 'my-skill\\evil.txt')
  await refused(t, { zip: await zipOf({ ...md, 'my-skill/a\u0000b': 'x' }) }, 'bad_path', 'my-skill/a\u0000b')
  await refused(t, { zip: rawZip([good, { name: '', data: enc('x') }]) }, 'empty_name', '')
  await refused(t, { zip: rawZip([good, { name: './', data: enc(''), attrs: (0o040755 << 16) >>> 0 }]) }, 'empty_name', './')
  await refused(t, { files: [good.name, 'my-skill/../x'].map((path) => ({ path, bytes: enc(skillMd()) })) }, 'traversal', 'my-skill/../x')
  await refused(t, filesWith('/x'), 'absolute', '/x')
})

t.test('links, special files, directories with data', async (t) => {
  await refused(t, await zipWithMode('my-skill/link', 0o120777), 'symlink', 'my-skill/link')
  await refused(t, await zipWithMode('my-skill/fifo', 0o010644), 'not_regular', 'my-skill/fifo')
  await refused(t, { zip: rawZip([good, { name: 'my-skill/dev', data: enc(''), attrs: (0o020600 << 16) >>> 0 }]) }, 'not_regular', 'my-skill/dev')
  await refused(t, { zip: rawZip([good, { name: 'my-skill/d/', data: enc('data') }]) }, 'not_regular', 'my-skill/d/')
  await refused(t, { zip: rawZip([good, { name: 'my-skill/label', data: enc(''), madeBy: 0, attrs: 0x08 }]) }, 'not_regular', 'my-skill/label')
  await refused(t, filesWith('my-skill/dir/'), 'not_regular', 'my-skill/dir/')
  // Made on DOS/Windows, the high attribute bits are not a mode: nothing to refuse.
  ok(await validateBundle({ zip: rawZip([good, { name: 'my-skill/a', data: enc('a'), madeBy: 0, attrs: (0o120777 << 16) >>> 0 }]) }))
})

t.test('duplicate paths, after normalisation', async (t) => {
  const x = { name: 'my-skill/a.txt', data: enc('1') }
  await refused(t, { zip: rawZip([good, x, { ...x, data: enc('2') }]) }, 'duplicate_path', 'my-skill/a.txt')
  await refused(t, { zip: rawZip([good, x, { name: 'my-skill/./a.txt', data: enc('2') }]) }, 'duplicate_path', 'my-skill/./a.txt')
  await refused(t, { zip: rawZip([good, x, { name: 'my-skill//a.txt', data: enc('2') }]) }, 'duplicate_path', 'my-skill//a.txt')
  await refused(
    t,
    { zip: await zipOf({ 'my-skill/SKILL.md': skillMd(), 'my-skill/caf\u00e9': '1', 'my-skill/cafe\u0301': '2' }) },
    'duplicate_path',
    'my-skill/cafe\u0301',
  )
  await refused(t, { zip: rawZip([good, x, { name: 'my-skill/a.txt/b', data: enc('2') }]) }, 'duplicate_path', 'my-skill/a.txt')
  await refused(t, { files: [good, good].map((e) => ({ path: e.name, bytes: e.data })) }, 'duplicate_path', 'my-skill/SKILL.md')
})

t.test('one top-level directory holding SKILL.md whose name matches it', async (t) => {
  await refused(t, { zip: await zipOf({ 'my-skill/SKILL.md': skillMd(), 'other/x.txt': 'x' }) }, 'top_level', 'other/x.txt')
  await refused(t, { zip: await zipOf({ 'my-skill/SKILL.md': skillMd(), 'README.md': 'x' }) }, 'top_level', 'README.md')
  await refused(t, { zip: await zipOf({ '__MACOSX/._SKILL.md': 'x', 'my-skill/SKILL.md': skillMd() }) }, 'top_level', '__MACOSX/._SKILL.md')
  await refused(t, { zip: await zipOf({ 'SKILL.md': skillMd() }) }, 'top_level', 'SKILL.md')
  await refused(t, { files: [{ path: 'SKILL.md', bytes: enc(skillMd()) }] }, 'top_level', 'SKILL.md')
  await refused(t, { zip: await zipOf({ 'my-skill/skill.md': skillMd() }) }, 'no_skill_md')
  await refused(t, { zip: await zipOf({ 'my-skill/sub/SKILL.md': skillMd() }) }, 'no_skill_md')
  await refused(t, { files: [] }, 'no_skill_md')
  await refused(t, { zip: await zipOf({ 'other-skill/SKILL.md': skillMd() }) }, 'dir_name', 'other-skill')
  await refused(t, { zip: await zipOf({ 'my-skill-/SKILL.md': skillMd() }) }, 'dir_name', 'my-skill-')
  ok(await validateBundle({ zip: await zipOf({ 'MY_SKILL/SKILL.md': skillMd() }) }))
})

t.test('frontmatter', async (t) => {
  const bundle = (md: string) => ({ files: [{ path: 'my-skill/SKILL.md', bytes: enc(md) }] })
  const path = 'my-skill/SKILL.md'
  await refused(t, bundle('# no frontmatter\n'), 'frontmatter', path)
  await refused(t, bundle('---\nname: my-skill\ndescription: d\n'), 'frontmatter', path)
  await refused(t, bundle('---\nname: [unclosed\n---\n'), 'frontmatter', path)
  await refused(t, bundle('---\nname: a\nname: b\ndescription: d\n---\n'), 'frontmatter', path)
  await refused(t, bundle('---\n- a\n- b\n---\n'), 'frontmatter', path)
  await refused(t, bundle('---\n---\n'), 'frontmatter', path)
  await refused(t, { files: [{ path, bytes: new Uint8Array([0x2d, 0x2d, 0x2d, 0x0a, 0xff, 0x0a, 0x2d, 0x2d, 0x2d]) }] }, 'frontmatter', path)
  await refused(
    t,
    bundle(
      '---\na: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n---\n',
    ),
    'frontmatter',
    path,
  )
  await refused(t, bundle(skillMd('My-Skill')), 'name', path)
  await refused(t, bundle(skillMd('claude-tools')), 'name', path)
  await refused(t, bundle('---\ndescription: d\n---\n'), 'name', path)
  await refused(t, bundle(skillMd('my-skill', '""')), 'description', path)
  await refused(t, bundle(skillMd('my-skill', '<b>bold</b>')), 'description', path)
  await refused(t, bundle(skillMd('my-skill', 'x'.repeat(1025))), 'description', path)
  const r = ok(await validateBundle(bundle('\ufeff---\r\nname: "my-skill"\r\ndescription: >-\r\n  Folded\r\n  text.\r\nlicense: MIT\r\n---\r\nBody')))
  t.equal(r.description, 'Folded text.', 'BOM, CRLF, quoting and folded scalars are YAML as usual')
})

t.test('size and count limits', async (t) => {
  await refused(t, { zip: new Uint8Array(SKILL_UPLOAD_MAX_BYTES) }, 'too_large')
  await refused(t, filesWith('my-skill/big', new Uint8Array(SKILL_UPLOAD_MAX_BYTES)), 'too_large')
  const many: Record<string, string> = { 'my-skill/SKILL.md': skillMd() }
  for (let i = 0; i < SKILL_MAX_FILES; i++) many[`my-skill/f/${i}.txt`] = `${i}`
  await refused(t, { zip: await zipOf(many) }, 'too_many_files')
  await refused(t, { files: Object.entries(many).map(([path, s]) => ({ path, bytes: enc(s) })) }, 'too_many_files')
  delete many['my-skill/f/0.txt']
  t.equal(ok(await validateBundle({ zip: await zipOf(many) })).files, SKILL_MAX_FILES, '1,000 files pass')
  await refused(t, { zip: new Uint8Array(100).fill(7) }, 'not_zip')
  await refused(t, { zip: new Uint8Array(0) }, 'not_zip')
})

t.test('zip bombs', async (t) => {
  // Declared: more than the bound in all, refused from the central directory alone (the data is 10 bytes).
  await refused(
    t,
    { zip: rawZip([good, { name: 'my-skill/big', data: enc('x'), compressed: new Uint8Array(10), size: SKILL_MAX_EXPANDED_BYTES + 1 }]) },
    'zip_bomb',
    'my-skill/big',
  )
  // Declared ratio: 4 MiB of zeros deflate to about 4 KB, 1,000:1.
  await refused(t, { zip: await zipOf({ 'my-skill/SKILL.md': skillMd(), 'my-skill/zeros': new Uint8Array(4 * 1024 * 1024) }) }, 'zip_bomb', 'my-skill/zeros')
  // Entries sharing one local header and its data.
  await refused(t, { zip: rawZip([good, { name: 'my-skill/a', data: enc('aaaa') }, { name: 'my-skill/b', data: enc('aaaa'), sameDataAs: 1 }]) }, 'zip_bomb')
  // Actual: the entry declares 1 KiB and inflates to 64 MiB, then turns into garbage. Inflating it all would end in an
  // inflate error (not_zip); stopping at the declared size refuses it as a bomb before the garbage is reached.
  const kernel = deflateRawSync(new Uint8Array(64 * 1024 * 1024), { finishFlush: zlib.Z_SYNC_FLUSH })
  const lying = Buffer.concat([kernel, Buffer.alloc(64 * 1024, 0xff)])
  t.ok(kernel.length > 32 * 1024, 'the valid part spans several of jszip’s 16 KiB input chunks')
  await refused(t, { zip: rawZip([good, { name: 'my-skill/bomb', data: enc('x'), compressed: lying, size: 1024 }]) }, 'zip_bomb', 'my-skill/bomb')
  // Smaller than declared, or not the declared CRC: damaged, not a bomb.
  await refused(t, { zip: rawZip([good, { name: 'my-skill/short', data: enc('abc'), size: 4 }]) }, 'not_zip', 'my-skill/short')
  await refused(t, { zip: rawZip([good, { name: 'my-skill/crc', data: enc('abc'), crc: 1 }]) }, 'not_zip', 'my-skill/crc')
})

t.test('entries jszip cannot or must not read', async (t) => {
  await refused(t, { zip: rawZip([good, { name: 'my-skill/enc', data: enc('x'), flags: 1 }]) }, 'unsupported', 'my-skill/enc')
  await refused(t, { zip: rawZip([good, { name: 'my-skill/bz', data: enc('x'), method: 12, compressed: enc('x') }]) }, 'unsupported', 'my-skill/bz')
  const zip = await zipOf({ 'my-skill/SKILL.md': skillMd() })
  await refused(t, { zip: new Uint8Array(Buffer.concat([Buffer.from('#!/bin/sh\n'), zip])) }, 'not_zip')
  await refused(t, { zip: zip.subarray(0, zip.length - 30) }, 'not_zip')
})
