import { crc32 } from 'node:zlib'
import JSZip from 'jszip'
import { parse as parseYaml } from 'yaml'
import {
  descriptionProblem,
  nameProblem,
  normalizeSkillDirName,
  SKILL_MAX_DIRECTORY_ENTRIES,
  SKILL_MAX_ENTRY_RATIO,
  SKILL_MAX_EXPANDED_BYTES,
  SKILL_MAX_FILES,
  SKILL_RATIO_EXEMPT_BYTES,
  SKILL_UPLOAD_MAX_BYTES,
} from '../protocol/skill-rules.js'

/**
 * Validates an uploaded skill bundle and writes its canonical zip. CPU-bound (inflate, deflate, YAML): it runs on the
 * skill pool's worker threads (gateway/skill-pool.ts), never on the gateway's event loop.
 */

export type BundleInput = { zip: Uint8Array } | { files: Array<{ path: string; bytes: Uint8Array }> }

export type BundleRule =
  | 'too_large'
  | 'too_many_files'
  | 'not_zip'
  | 'unsupported'
  | 'empty_name'
  | 'bad_path'
  | 'absolute'
  | 'backslash'
  | 'traversal'
  | 'symlink'
  | 'not_regular'
  | 'duplicate_path'
  | 'top_level'
  | 'no_skill_md'
  | 'frontmatter'
  | 'name'
  | 'description'
  | 'dir_name'
  | 'zip_bomb'

export type BundleResult =
  | {
      ok: true
      name: string
      description: string
      /** The canonical zip: the bundle re-rooted under `name`. */
      zip: Uint8Array
      files: number
      expandedBytes: number
      skillMd: string
    }
  | { ok: false; rule: BundleRule; message: string; path?: string }

// The canonical zip: entries sorted by path (UTF-16 order), no directory entries, one timestamp, one of two modes
// (executable or not), deflate at one level (or stored, by a test of the bytes alone). The bytes are a function of the content for a given jszip and
// its pako, both pinned by the lockfile: upgrading either may change the bytes of the same content, never the content.

/** DOS time cannot go before 1980: its first instant is the one fixed timestamp of every canonical entry. */
export const CANONICAL_DATE = new Date(Date.UTC(1980, 0, 1, 0, 0, 0))
/** Regular file, rw-r--r--: every file of the bundle not marked executable where it came from. */
export const CANONICAL_MODE = 0o100644
/**
 * Regular file, rwxr-xr-x: a file whose zip entry was made on Unix (or macOS) with any execute bit set, as the scripts of
 * the vendor's public skills are; sandboxes then mount it r-x, so `./script.sh` runs. `files[]` parts carry no mode.
 */
export const CANONICAL_EXEC_MODE = 0o100755
export const CANONICAL_LEVEL = 6

class Refusal extends Error {
  constructor(
    readonly rule: BundleRule,
    message: string,
    readonly path?: string,
  ) {
    super(message)
  }
}

const refuse = (rule: BundleRule, message: string, path?: string): never => {
  throw new Refusal(rule, path === undefined ? message : `${JSON.stringify(path)}: ${message}`, path)
}

export async function validateBundle(input: BundleInput): Promise<BundleResult> {
  try {
    return await validate(input)
  } catch (err) {
    if (err instanceof Refusal) return { ok: false, rule: err.rule, message: err.message, ...(err.path === undefined ? {} : { path: err.path }) }
    throw err
  }
}

/** One entry as listed, before any of its bytes are inflated. */
interface Entry {
  /** As the archive or the client spelled it. */
  raw: string
  dir: boolean
  /** Declared expanded size (the bytes themselves for `files`). */
  size: number
  /** Zip entries only. */
  zip?: ZipRecord
  bytes?: Uint8Array
  /** The entry's Unix mode says executable (zip entries made on Unix or macOS only). */
  exec?: boolean
}

async function validate(input: BundleInput): Promise<BundleResult> {
  const listed = 'zip' in input ? listZip(input.zip) : listFiles(input.files)
  const kept: Array<Entry & { segments: string[] }> = []
  for (const e of listed) kept.push({ ...e, segments: checkPath(e.raw, e.dir) })
  const files = kept.filter((e) => !e.dir)
  if (files.length > SKILL_MAX_FILES) refuse('too_many_files', `the bundle has ${files.length} files; at most ${SKILL_MAX_FILES} are allowed`)
  checkUnique(kept)
  const top = checkTopLevel(kept)
  if ('zip' in input) checkDeclaredExpansion(files)

  const skillMdEntry = files.find(isRootSkillMd)
  if (!skillMdEntry) refuse('no_skill_md', `the bundle has no ${top}/SKILL.md`)
  const jszip = 'zip' in input ? await loadZip(input.zip, files) : undefined
  const budget = { left: SKILL_MAX_EXPANDED_BYTES }
  const contentOf = (e: Entry) => (jszip ? inflate(jszip, e, budget) : Promise.resolve(e.bytes!))

  // SKILL.md first: a bundle with a bad name is refused before the rest is inflated.
  const skillMdBytes = await contentOf(skillMdEntry!)
  const { name, description, skillMd } = readFrontmatter(skillMdBytes, skillMdEntry!.raw)
  if (normalizeSkillDirName(top) !== name)
    refuse('dir_name', `the top-level directory must equal the frontmatter name "${name}" after lowercasing and replacing "_" with "-"`, top)

  const out = new JSZip()
  const entries: Array<{ path: string; bytes: Uint8Array; exec: boolean }> = []
  let expandedBytes = 0
  for (const e of files) {
    const bytes = e === skillMdEntry ? skillMdBytes : await contentOf(e)
    expandedBytes += bytes.byteLength
    entries.push({ path: [name, ...e.segments.slice(1)].join('/'), bytes, exec: e.exec === true })
  }
  entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
  for (const { path, bytes, exec } of entries)
    out.file(path, bytes, {
      binary: true,
      date: CANONICAL_DATE,
      unixPermissions: exec ? CANONICAL_EXEC_MODE : CANONICAL_MODE,
      createFolders: false,
      compression: incompressible(bytes) ? 'STORE' : 'DEFLATE',
    })
  const zip = await out.generateAsync({ type: 'uint8array', compression: 'DEFLATE', compressionOptions: { level: CANONICAL_LEVEL }, platform: 'UNIX' })
  return { ok: true, name, description, zip, files: entries.length, expandedBytes, skillMd }
}

const SAMPLE_BYTES = 64 * 1024

/**
 * Already-compressed content (images, PDFs, fonts, office files, archives) gains nothing from deflate, which is most of
 * a large bundle's validation time: it is stored instead. The test is a pure function of the bytes, so the zip stays
 * canonical: at least 4 KiB, and the first 64 KiB have a near-flat byte histogram (Σcount² under 1.5 times a uniform
 * sample's n²/256; random bytes come within 1 + 256/n of it, text and code many times over). Content that repeats
 * random-looking blocks passes the test and is stored uncompressed: a missed saving, bounded by the expansion limit.
 */
function incompressible(bytes: Uint8Array): boolean {
  const n = Math.min(bytes.byteLength, SAMPLE_BYTES)
  if (n < 4096) return false
  const counts = new Uint32Array(256)
  for (let i = 0; i < n; i++) counts[bytes[i]!]!++
  let squares = 0
  for (const c of counts) squares += c * c
  return 256 * squares < 1.5 * n * n
}

function listFiles(files: Array<{ path: string; bytes: Uint8Array }>): Entry[] {
  const total = files.reduce((n, f) => n + f.bytes.byteLength, 0)
  if (total >= SKILL_UPLOAD_MAX_BYTES) refuse('too_large', `the files total ${total} bytes; the bundle must be smaller than ${SKILL_UPLOAD_MAX_BYTES}`)
  if (files.length > SKILL_MAX_FILES) refuse('too_many_files', `the bundle has ${files.length} files; at most ${SKILL_MAX_FILES} are allowed`)
  return files.map((f) => {
    if (f.path.endsWith('/')) refuse('not_regular', 'a file part must name a file, not a directory', f.path)
    return { raw: f.path, dir: false, size: f.bytes.byteLength, bytes: f.bytes }
  })
}

/** The path's segments after normalisation (NFC; empty and `.` segments dropped), or the rule it breaks. */
function checkPath(raw: string, dir: boolean): string[] {
  if (raw.length === 0) refuse('empty_name', 'an entry has an empty name', raw)
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this refuses
  if (/[\u0000-\u001f\u007f]/.test(raw)) refuse('bad_path', 'control characters are not allowed in a path', raw)
  if (raw.includes('\\')) refuse('backslash', 'backslashes are not allowed in a path (use "/")', raw)
  if (raw.startsWith('/')) refuse('absolute', 'absolute paths are not allowed', raw)
  if (/^[A-Za-z]:/.test(raw)) refuse('absolute', 'drive letters are not allowed in a path', raw)
  const segments = raw
    .normalize('NFC')
    .split('/')
    .filter((s) => s !== '' && s !== '.')
  if (segments.includes('..')) refuse('traversal', '".." is not allowed in a path', raw)
  if (segments.length === 0) refuse('empty_name', 'an entry has an empty name', raw)
  if (!dir && raw.endsWith('/')) refuse('not_regular', 'a file entry must not end with "/"', raw)
  return segments
}

/** Duplicates after normalisation, and a path that is both a file and a directory. */
function checkUnique(entries: Array<Entry & { segments: string[] }>): void {
  const files = new Map<string, string>()
  const dirs = new Map<string, string>()
  for (const e of entries) {
    const key = e.segments.join('/')
    if (e.dir) dirs.set(key, e.raw)
    else {
      const other = files.get(key)
      if (other !== undefined) refuse('duplicate_path', `the path is given twice${other === e.raw ? '' : ` (also as ${JSON.stringify(other)})`}`, e.raw)
      files.set(key, e.raw)
      for (let i = 1; i < e.segments.length; i++) {
        const parent = e.segments.slice(0, i).join('/')
        if (!dirs.has(parent)) dirs.set(parent, e.raw)
      }
    }
  }
  for (const [key, raw] of files) if (dirs.has(key)) refuse('duplicate_path', 'the path is both a file and a directory', raw)
}

const isRootSkillMd = (e: { dir: boolean; segments: string[] }) => !e.dir && e.segments.length === 2 && e.segments[1] === 'SKILL.md'

/** Exactly one top-level directory holds everything; its name. The one holding SKILL.md is the one the others miss. */
function checkTopLevel(entries: Array<Entry & { segments: string[] }>): string {
  const first = entries.find(isRootSkillMd) ?? entries.find((e) => !e.dir) ?? entries[0]
  if (!first) refuse('no_skill_md', 'the bundle is empty')
  const top = first!.segments[0]!
  for (const e of entries) {
    if (e.segments[0] !== top) refuse('top_level', `the bundle must have exactly one top-level directory; this entry is outside "${top}/"`, e.raw)
    if (!e.dir && e.segments.length < 2) refuse('top_level', 'files must be inside the top-level directory, not beside it', e.raw)
  }
  return top
}

function checkDeclaredExpansion(files: Entry[]): void {
  let total = 0
  for (const e of files) {
    total += e.size
    if (total > SKILL_MAX_EXPANDED_BYTES) refuse('zip_bomb', `the entries declare more than ${SKILL_MAX_EXPANDED_BYTES} bytes expanded in all`, e.raw)
    const ratio = e.size / Math.max(1, e.zip!.compressedSize)
    if (e.size > SKILL_RATIO_EXEMPT_BYTES && ratio > SKILL_MAX_ENTRY_RATIO)
      refuse('zip_bomb', `the entry declares a compression ratio of ${Math.round(ratio)}:1; at most ${SKILL_MAX_ENTRY_RATIO}:1 is allowed`, e.raw)
  }
}

interface Frontmatter {
  name: string
  description: string
  skillMd: string
}

function readFrontmatter(bytes: Uint8Array, path: string): Frontmatter {
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes)
  } catch {
    return refuse('frontmatter', 'SKILL.md is not valid UTF-8', path)
  }
  const open = /^---[ \t]*\r?\n/.exec(text)
  if (!open) refuse('frontmatter', 'SKILL.md must begin with YAML frontmatter: a "---" line', path)
  const close = /^---[ \t]*(?:\r?\n|$)/gm
  close.lastIndex = open![0].length
  const end = close.exec(text)
  if (!end) refuse('frontmatter', 'SKILL.md frontmatter has no closing "---" line', path)
  let data: unknown
  try {
    // The `yaml` package builds plain data (no code, no custom constructors); aliases are bounded against
    // billion-laughs expansion.
    data = parseYaml(text.slice(open![0].length, end!.index), { uniqueKeys: true, maxAliasCount: 100, prettyErrors: false, logLevel: 'error' })
  } catch (err) {
    return refuse('frontmatter', `SKILL.md frontmatter is not valid YAML: ${(err as Error).message.split('\n')[0]}`, path)
  }
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return refuse('frontmatter', 'SKILL.md frontmatter must be a YAML mapping', path)
  const { name, description } = data as Record<string, unknown>
  const nameIssue = nameProblem(name)
  if (nameIssue) refuse('name', nameIssue, path)
  const descriptionIssue = descriptionProblem(description)
  if (descriptionIssue) refuse('description', descriptionIssue, path)
  return { name: name as string, description: description as string, skillMd: text }
}

// ---- Reading the archive -------------------------------------------------------------------------------------------
// The central directory is read here rather than through jszip's listing: jszip resolves `..` away, keeps one of two
// entries with the same name, and hides the entry count, modes and declared sizes, which are what these checks need.
// jszip then inflates and writes; the two listings must agree entry for entry.

interface ZipRecord {
  madeBy: number
  flags: number
  method: number
  crc32: number
  compressedSize: number
  externalAttributes: number
  localOffset: number
}

const SIG_EOCD = 0x06054b50
const SIG_EOCD64 = 0x06064b50
const SIG_EOCD64_LOCATOR = 0x07064b50
const SIG_CENTRAL = 0x02014b50
const SIG_LOCAL = 0x04034b50
const MADE_BY_UNIX = 3
const MADE_BY_DARWIN = 19
const S_IFMT = 0o170000
const S_IFREG = 0o100000
const S_IFDIR = 0o040000
const S_IFLNK = 0o120000
const DOS_VOLUME_LABEL = 0x08
const DOS_DIRECTORY = 0x10
const utf8 = new TextDecoder('utf-8', { fatal: true })

function listZip(bytes: Uint8Array): Entry[] {
  if (bytes.byteLength >= SKILL_UPLOAD_MAX_BYTES)
    refuse('too_large', `the archive is ${bytes.byteLength} bytes; it must be smaller than ${SKILL_UPLOAD_MAX_BYTES}`)
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const u16 = (at: number) => view.getUint16(at, true)
  const u32 = (at: number) => view.getUint32(at, true)
  const u64 = (at: number) => Number(view.getBigUint64(at, true))
  const notZip = (why: string): never => refuse('not_zip', `not a zip archive: ${why}`)

  // The last end-of-central-directory signature, as jszip finds it.
  let eocd = -1
  for (let at = bytes.byteLength - 22; at >= Math.max(0, bytes.byteLength - 22 - 0xffff); at--)
    if (u32(at) === SIG_EOCD) {
      eocd = at
      break
    }
  if (eocd < 0) notZip('no end of central directory')
  let count = u16(eocd + 10)
  let cdSize = u32(eocd + 12)
  let cdOffset = u32(eocd + 16)
  let cdEnd = eocd
  if (u16(eocd + 4) !== 0 || u16(eocd + 6) !== 0) notZip('multi-disk archives are not supported')
  if (count === 0xffff || cdSize === 0xffffffff || cdOffset === 0xffffffff) {
    const locator = eocd - 20
    if (locator < 0 || u32(locator) !== SIG_EOCD64_LOCATOR) notZip('ZIP64 end of central directory locator missing')
    const eocd64 = u64(locator + 8)
    if (eocd64 + 56 > locator || u32(eocd64) !== SIG_EOCD64) notZip('ZIP64 end of central directory missing')
    count = u64(eocd64 + 32)
    cdSize = u64(eocd64 + 40)
    cdOffset = u64(eocd64 + 48)
    cdEnd = eocd64
  }
  // Data before the archive (self-extractors) shifts every offset; jszip guesses the shift, we refuse it.
  if (cdOffset + cdSize !== cdEnd) notZip('the central directory is not where the archive says')
  if (count > SKILL_MAX_FILES + SKILL_MAX_DIRECTORY_ENTRIES)
    refuse('too_many_files', `the archive has ${count} entries; at most ${SKILL_MAX_FILES} files (and ${SKILL_MAX_DIRECTORY_ENTRIES} directories) are allowed`)

  const entries: Entry[] = []
  let at = cdOffset
  for (let i = 0; i < count; i++) {
    if (at + 46 > cdEnd || u32(at) !== SIG_CENTRAL) notZip('a central directory record is damaged')
    const nameLength = u16(at + 28)
    const extraLength = u16(at + 30)
    const next = at + 46 + nameLength + extraLength + u16(at + 32)
    if (next > cdEnd) notZip('a central directory record is damaged')
    const flags = u16(at + 8)
    const nameBytes = bytes.subarray(at + 46, at + 46 + nameLength)
    let uncompressedSize = u32(at + 24)
    let compressedSize = u32(at + 20)
    let localOffset = u32(at + 42)
    let unicodePath: string | undefined
    const extraEnd = at + 46 + nameLength + extraLength
    for (let x = at + 46 + nameLength; x + 4 <= extraEnd; ) {
      const id = u16(x)
      const size = u16(x + 2)
      if (x + 4 + size > extraEnd) notZip('an extra field is damaged')
      let f = x + 4
      if (id === 0x0001) {
        // ZIP64 sizes appear in this order, each only where the record holds 0xffffffff.
        const next64 = (declared: number) => {
          if (declared !== 0xffffffff || f + 8 > x + 4 + size) return declared
          f += 8
          return u64(f - 8)
        }
        uncompressedSize = next64(uncompressedSize)
        compressedSize = next64(compressedSize)
        localOffset = next64(localOffset)
      } else if (id === 0x7075 && size >= 5 && view.getUint8(f) === 1 && u32(f + 1) === crc32(nameBytes)) {
        // jszip reads the Info-ZIP Unicode Path in place of a name not flagged UTF-8, when its CRC matches.
        unicodePath = decodeName(bytes.subarray(f + 5, x + 4 + size))
      }
      x += 4 + size
    }
    const raw = (flags & 0x0800) === 0 && unicodePath !== undefined ? unicodePath : decodeName(nameBytes)
    const record: ZipRecord = {
      madeBy: u16(at + 4) >> 8,
      flags,
      method: u16(at + 10),
      crc32: u32(at + 16),
      compressedSize,
      externalAttributes: u32(at + 38),
      localOffset,
    }
    const dir = checkKind(raw, record, uncompressedSize)
    entries.push({ raw, dir, size: uncompressedSize, zip: record, exec: !dir && isExecutable(record) })
    at = next
  }
  checkNoOverlap(entries, view, cdOffset)
  return entries
}

/** A name that is not UTF-8 is refused rather than guessed at: jszip and this reader must read the same name. */
function decodeName(bytes: Uint8Array): string {
  try {
    return utf8.decode(bytes)
  } catch {
    return refuse('bad_path', 'an entry name is not valid UTF-8', Buffer.from(bytes).toString('latin1'))
  }
}

const S_IXANY = 0o111

/** Whether a Unix-made entry's mode has an execute bit (what `zip` and `chmod +x` leave on a script). */
const isExecutable = (r: ZipRecord) => (r.madeBy === MADE_BY_UNIX || r.madeBy === MADE_BY_DARWIN) && ((r.externalAttributes >>> 16) & S_IXANY) !== 0

/** Whether the entry is a directory, or the rule its kind breaks. */
function checkKind(raw: string, r: ZipRecord, size: number): boolean {
  let dir = raw.endsWith('/') || (r.externalAttributes & DOS_DIRECTORY) !== 0
  if (r.madeBy === MADE_BY_UNIX || r.madeBy === MADE_BY_DARWIN) {
    const type = (r.externalAttributes >>> 16) & S_IFMT
    if (type === S_IFLNK) refuse('symlink', 'symbolic links are not allowed', raw)
    if (type !== 0 && type !== S_IFREG && type !== S_IFDIR)
      refuse('not_regular', `only regular files and directories are allowed (mode ${type.toString(8)})`, raw)
    if (type === S_IFDIR) dir = true
  }
  if ((r.externalAttributes & DOS_VOLUME_LABEL) !== 0) refuse('not_regular', 'volume labels are not allowed', raw)
  if (dir && size > 0) refuse('not_regular', 'a directory entry must not hold data', raw)
  if (r.flags & 0x0001) refuse('unsupported', 'encrypted entries are not supported', raw)
  if (r.method !== 0 && r.method !== 8) refuse('unsupported', `compression method ${r.method} is not supported (only stored and deflated)`, raw)
  return dir
}

/**
 * Each entry's data lies between its local header and the next entry's, before the central directory. Entries that
 * share data (the overlapping-entry bomb: many records pointing at one small, highly compressed kernel) are refused.
 */
function checkNoOverlap(entries: Entry[], view: DataView, cdOffset: number): void {
  const byOffset = [...entries].sort((a, b) => a.zip!.localOffset - b.zip!.localOffset)
  let end = 0
  for (const e of byOffset) {
    const start = e.zip!.localOffset
    if (start < end) refuse('zip_bomb', 'the entry overlaps another entry', e.raw)
    if (start + 30 > cdOffset || view.getUint32(start, true) !== SIG_LOCAL) refuse('not_zip', 'not a zip archive: a local header is missing', e.raw)
    end = start + 30 + view.getUint16(start + 26, true) + view.getUint16(start + 28, true) + e.zip!.compressedSize
    if (end > cdOffset) refuse('not_zip', 'not a zip archive: an entry runs into the central directory', e.raw)
  }
}

async function loadZip(bytes: Uint8Array, files: Entry[]): Promise<Map<Entry, JSZip.JSZipObject>> {
  let zip: JSZip
  try {
    zip = await JSZip.loadAsync(bytes, { checkCRC32: false, createFolders: false })
  } catch (err) {
    return refuse('not_zip', `not a zip archive: ${(err as Error).message}`)
  }
  const byRaw = new Map<string, JSZip.JSZipObject>()
  for (const o of Object.values(zip.files)) if (!o.dir) byRaw.set(o.unsafeOriginalName ?? o.name, o)
  const objects = new Map<Entry, JSZip.JSZipObject>()
  for (const e of files) {
    const o = byRaw.get(e.raw)
    if (!o) refuse('not_zip', 'not a zip archive: its entries are listed inconsistently', e.raw)
    objects.set(e, o!)
  }
  return objects
}

/** What jszip gives at run time and its typings leave out: the entry's content as a pausable stream. */
interface Streamable {
  internalStream(type: 'uint8array'): JSZip.JSZipStreamHelper<Uint8Array>
}

/**
 * The entry's bytes, counted as they inflate: inflation stops as soon as they pass the entry's declared size or the
 * bundle's remaining expansion budget, so a lying header costs at most one inflate step (jszip's 16 KiB input chunk)
 * beyond the bound.
 */
function inflate(objects: Map<Entry, JSZip.JSZipObject>, e: Entry, budget: { left: number }): Promise<Uint8Array> {
  const cap = Math.min(e.size, budget.left)
  return new Promise<Uint8Array>((resolve, reject) => {
    const chunks: Uint8Array[] = []
    let n = 0
    let settled = false
    const stream = (objects.get(e) as unknown as Streamable).internalStream('uint8array')
    const stop = (err: unknown) => {
      if (settled) return
      settled = true
      stream.pause()
      reject(err)
    }
    stream
      .on('data', (chunk) => {
        if (settled) return
        n += chunk.byteLength
        if (n > e.size) return stop(new Refusal('zip_bomb', `${JSON.stringify(e.raw)}: the entry inflates past its declared size of ${e.size} bytes`, e.raw))
        if (n > cap) return stop(new Refusal('zip_bomb', `${JSON.stringify(e.raw)}: the bundle inflates past ${SKILL_MAX_EXPANDED_BYTES} bytes`, e.raw))
        chunks.push(chunk)
      })
      .on('error', (err) => stop(new Refusal('not_zip', `${JSON.stringify(e.raw)}: not a zip archive: ${err.message}`, e.raw)))
      .on('end', () => {
        if (settled) return
        settled = true
        const bytes = Buffer.concat(chunks, n)
        if (n !== e.size) return reject(new Refusal('not_zip', `${JSON.stringify(e.raw)}: the entry holds ${n} bytes, not the ${e.size} it declares`, e.raw))
        if (crc32(bytes) !== e.zip!.crc32)
          return reject(new Refusal('not_zip', `${JSON.stringify(e.raw)}: the entry's CRC-32 does not match its content`, e.raw))
        budget.left -= n
        resolve(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength))
      })
      .resume()
  })
}
