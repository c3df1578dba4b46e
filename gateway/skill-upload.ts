import type { Readable } from 'node:stream'
import busboy from 'busboy'
import { ApiError } from '../protocol/errors/api-error.js'
import { fail } from '../protocol/errors/fail.js'
import { SKILL_MAX_FILES, SKILL_UPLOAD_MAX_BYTES } from '../protocol/skill-rules.js'
import type { BundleInput } from './skill-bundle.js'
import type { Headers } from './transport.js'

export interface SkillUpload {
  input: BundleInput
  /** `display_title` (spec) or `display_name` (the official client), when the upload carried one. */
  title?: string
}

export type SkillUploadResult = { ok: true; upload: SkillUpload } | { ok: false; error: ApiError }

/** Text fields of at most this many bytes (a title is at most 255 characters). */
const FIELD_MAX = 1024

/**
 * Reads a skill upload (WIRE §11, DECISIONS "Skills"): a zip archive in the part `file` (or as the one `files[]` part,
 * `isZipFile`), or one part `files[]` per file whose filename is its path in the bundle (`my-skill/SKILL.md`, kept
 * whole: busboy's `preservePath`), plus an
 * optional text part `display_title` or `display_name`. The parts are held in memory, at most
 * `SKILL_UPLOAD_MAX_BYTES` of them in all (413 past it, the rest of the body dropped by the caller), and at most
 * SKILL_MAX_FILES files: what validation reads whole anyway.
 */
export function receiveSkillUpload(body: Readable, headers: Headers): Promise<SkillUploadResult> {
  let parser: busboy.Busboy
  try {
    parser = busboy({
      headers,
      preservePath: true,
      limits: { files: SKILL_MAX_FILES + 1, fields: 8, fieldSize: FIELD_MAX, parts: SKILL_MAX_FILES + 9, headerPairs: 32 },
    })
  } catch {
    return Promise.resolve({ ok: false, error: fail('upload_not_multipart') })
  }
  return new Promise((resolve) => {
    let zip: Uint8Array | undefined
    const files: Array<{ path: string; bytes: Uint8Array }> = []
    let title: string | undefined
    let total = 0
    let problem: ApiError | undefined
    let settled = false
    const reading = new Set<Promise<void>>()
    const finish = async (err?: ApiError) => {
      if (settled) return
      settled = true
      body.unpipe(parser)
      if (err) parser.destroy()
      else await Promise.all(reading)
      const error =
        err ?? problem ?? (zip && files.length ? fail('skill_bundle_invalid', 'send either one zip as "file" or the files as "files[]", not both') : undefined)
      if (error) return resolve({ ok: false, error })
      if (!zip && !files.length) return resolve({ ok: false, error: fail('skill_bundle_missing') })
      const input: BundleInput = zip ? { zip } : isZipFile(files) ? { zip: files[0]!.bytes } : { files }
      resolve({ ok: true, upload: { input, ...(title === undefined ? {} : { title }) } })
    }
    parser.on('file', (name, stream, info) => {
      stream.on('error', () => undefined)
      const isZip = name === 'file'
      if (!isZip && name !== 'files[]' && name !== 'files') {
        problem ??= fail('skill_bundle_invalid', `unexpected file part ${JSON.stringify(name.slice(0, 64))}: send "file" or "files[]"`)
        return void stream.resume()
      }
      if (isZip && zip) {
        problem ??= fail('skill_bundle_invalid', 'more than one part named "file"; send one zip')
        return void stream.resume()
      }
      const chunks: Buffer[] = []
      const read = (async () => {
        for await (const chunk of stream as AsyncIterable<Buffer>) {
          total += chunk.length
          if (total >= SKILL_UPLOAD_MAX_BYTES) return void finish(fail('skill_bundle_too_large', SKILL_UPLOAD_MAX_BYTES))
          chunks.push(chunk)
        }
        // Not copied again: a concatenation past 4 KiB owns its whole buffer, which the pool moves to its worker (a
        // smaller one, a view into Node's shared pool, is copied there). A 25 MB copy held the loop ~6–19 ms.
        const bytes: Uint8Array = Buffer.concat(chunks)
        if (isZip) zip = bytes
        else files.push({ path: info.filename ?? '', bytes })
      })().catch(() => undefined)
      reading.add(read)
    })
    parser.on('field', (name, value, info) => {
      if (name !== 'display_title' && name !== 'display_name') return
      if (info.valueTruncated) problem ??= fail('invalid_request', `${name}: at most 255 characters`)
      else if (title !== undefined && title !== value) problem ??= fail('invalid_request', `${name}: differs from the title already given`)
      else title = value
    })
    parser.on('filesLimit', () => void finish(fail('skill_bundle_invalid', `more than ${SKILL_MAX_FILES} files`)))
    parser.on('partsLimit', () => void finish(fail('skill_bundle_invalid', `more than ${SKILL_MAX_FILES} files`)))
    parser.on('error', (err: Error) => void finish(fail('upload_malformed', err.message)))
    parser.once('close', () => void finish())
    body.on('error', (err) => void finish(err instanceof ApiError ? err : fail('upload_malformed', String(err.message))))
    body.pipe(parser)
  })
}

/** A zip's first bytes: a local file header, or the end record of an empty archive. */
const ZIP_MAGIC = [Buffer.from('PK\x03\x04', 'latin1'), Buffer.from('PK\x05\x06', 'latin1')]

/**
 * The official client sends every part as `files[]`, so a zip it uploads (`files: [zipFile]`) arrives as one part whose
 * name is a bare file name (a bundle's own files are named by their path, always inside the top-level directory) and
 * whose bytes are a zip: that is the archive, read as if sent as `file`.
 */
const isZipFile = (files: ReadonlyArray<{ path: string; bytes: Uint8Array }>) =>
  files.length === 1 && !files[0]!.path.includes('/') && ZIP_MAGIC.some((m) => Buffer.from(files[0]!.bytes.subarray(0, 4)).equals(m))

/** Bytes held whole, as the stream an object store reads. */
export const bytesStream = (bytes: Uint8Array): ReadableStream<Uint8Array> =>
  new ReadableStream({
    start(c) {
      c.enqueue(bytes)
      c.close()
    },
  })
