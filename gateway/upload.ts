import type { Readable } from 'node:stream'
import busboy from 'busboy'
import { ApiError } from '../protocol/errors/api-error.js'
import { fail } from '../protocol/errors/fail.js'
import type { FileBytes, StoredObject } from '../protocol/files.js'
import type { FileRecordInputT } from '../protocol/schemas/file.js'
import type { Headers } from './transport.js'

/** Room for the multipart framing around the file (boundaries, part headers, small fields) in a declared length. */
export const MULTIPART_SLACK = 64 * 1024

/** An upload's parts: at most this many, and fields (`expires_in_seconds`) of at most this many bytes. */
const PART_LIMITS = { parts: 16, fieldSize: 1024, headerPairs: 32 }

export type UploadResult = { ok: true; file: Omit<FileRecordInputT, 'id' | 'object'> } | { ok: false; error: ApiError }

/**
 * Reads a multipart upload, streaming its one `file` part into the store as `object` while the body arrives. The
 * file's record is the caller's to write, and only once this resolves ok: on any failure the bytes are gone (or
 * never complete, which the store never shows), and what is left of the body is the caller's to drop. The filename
 * is its last path component (busboy strips the rest).
 */
export function receiveUpload(body: Readable, headers: Headers, object: string, files: FileBytes, limit: number): Promise<UploadResult> {
  let parser: busboy.Busboy
  try {
    parser = busboy({ headers, limits: PART_LIMITS })
  } catch {
    return Promise.resolve({ ok: false, error: fail('upload_not_multipart') })
  }
  return new Promise((resolve) => {
    let put: Promise<StoredObject | { failed: unknown }> | undefined
    let file: { filename: string; mime_type: string } | undefined
    let problem: ApiError | undefined
    let settled = false
    /** Decides once: `err` is what stopped reading early (the client gone, too large, bad multipart), if anything. */
    const finish = async (err?: unknown) => {
      if (settled) return
      settled = true
      body.unpipe(parser)
      if (err !== undefined) parser.destroy()
      const stored = put && (await put)
      const putFailed = stored && 'failed' in stored ? stored.failed : undefined
      const error: unknown = err ?? problem ?? (putFailed !== undefined ? storeFailure(putFailed) : file ? undefined : fail('upload_file_missing'))
      if (error === undefined) {
        const { size, digest } = stored as StoredObject
        return resolve({ ok: true, file: { ...file!, size_bytes: size, digest } })
      }
      // Bytes stored whole for an upload that then broke a rule (a second `file` part): take them back.
      if (stored && putFailed === undefined) await files.discard(object).catch(() => undefined)
      resolve({ ok: false, error: error instanceof ApiError ? error : fail('upload_malformed', String(error)) })
    }
    parser.on('file', (name, stream, info) => {
      // A part cut short errors; that reaches the answer through the parser (and the store's read), not from here.
      stream.on('error', () => undefined)
      if (name !== 'file') return void stream.resume()
      if (file) {
        problem = fail('upload_file_repeated')
        return void stream.resume()
      }
      file = { filename: info.filename || 'unnamed', mime_type: info.mimeType || 'application/octet-stream' }
      put = files
        .put(
          object,
          limited(stream, limit, (e) => void finish(e)),
        )
        .catch((failed: unknown) => {
          // The store gave up while the body still arrives: nothing reads the part any more, so stop here.
          void finish(storeFailure(failed))
          return { failed }
        })
    })
    parser.on('partsLimit', () => (problem ??= fail('upload_malformed', `more than ${PART_LIMITS.parts} parts`)))
    parser.on('error', (err: Error) => void finish(fail('upload_malformed', err.message)))
    parser.once('close', () => void finish())
    body.on('error', (err) => void finish(err))
    body.pipe(parser)
  })
}

/** Why the store refused bytes: our own refusal (too large) as it is, anything else a moment's unavailability. */
const storeFailure = (err: unknown): ApiError => (err instanceof ApiError ? err : fail('store_unavailable'))

/**
 * The part's bytes as the store reads them (pulled, so the client is paused while the store is busy), failing once
 * more than `limit` have come: the store then purges what it wrote.
 */
function limited(part: Readable, limit: number, tooLarge: (e: ApiError) => void): ReadableStream<Uint8Array> {
  const chunks = part[Symbol.asyncIterator]()
  let size = 0
  return new ReadableStream<Uint8Array>(
    {
      async pull(c) {
        const { done, value } = await chunks.next()
        if (done) return c.close()
        size += value.length
        if (size <= limit) return c.enqueue(value)
        const err = fail('file_too_large', limit)
        c.error(err)
        tooLarge(err)
      },
      cancel: () => void part.destroy(),
    },
    { highWaterMark: 0 },
  )
}
