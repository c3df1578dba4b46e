import type { IncomingMessage } from 'node:http'
import type { BodyResult, BodyStream, Unread } from '../../transport.js'
import type { Life } from '../life.js'

/**
 * Reads the request body up to `limit` bytes. Past the limit (declared, or counted while reading) it stops keeping
 * chunks at once and reports `too_large`, so a huge upload costs no memory; what still comes is dropped.
 */
export function readBody(req: IncomingMessage, life: Life, limit: number, declared: number | undefined): Promise<BodyResult> {
  if (declared !== undefined && declared > limit) return Promise.resolve({ ok: false, reason: 'too_large', unread: dropBody(req) })
  if (life.aborted) return Promise.resolve({ ok: false, reason: 'aborted' })
  return new Promise((resolve) => {
    const aborted = () => resolve({ ok: false, reason: 'aborted' })
    life.hooks.add(aborted)
    // A declared length is copied once, into its place; a chunked body is gathered, then joined.
    let whole = declared !== undefined ? Buffer.allocUnsafe(declared) : undefined
    let chunks: Buffer[] = []
    let size = 0
    let unread: Unread | undefined
    req.on('data', (chunk: Buffer) => {
      if (unread) {
        unread.dropped += chunk.length
        return unread.onProgress?.()
      }
      if (size + chunk.length > limit) {
        chunks = []
        whole = undefined
        unread = { ended: false, dropped: 0 }
        life.hooks.delete(aborted)
        return resolve({ ok: false, reason: 'too_large', unread })
      }
      if (whole && size + chunk.length <= whole.length) chunk.copy(whole, size)
      else {
        // More than declared (a length the parser did not frame the body by): gather from here on.
        if (whole) chunks.push(whole.subarray(0, size))
        whole = undefined
        chunks.push(chunk)
      }
      size += chunk.length
    })
    req.once('end', () => {
      if (unread) {
        unread.ended = true
        return unread.onProgress?.()
      }
      life.hooks.delete(aborted)
      resolve({ ok: true, bytes: whole ? whole.subarray(0, size) : chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size) })
    })
    // A connection lost mid-body: the response's 'close' reports the abort; this only keeps the error handled.
    req.once('error', () => undefined)
  })
}

/** Drops a body that will not be read at all, noting its end (for a lingering close). */
export function dropBody(req: IncomingMessage): Unread {
  const unread: Unread = { ended: req.complete && req.readableEnded, dropped: 0 }
  req.on('data', (chunk: Buffer) => {
    unread.dropped += chunk.length
    unread.onProgress?.()
  })
  req.once('end', () => {
    unread.ended = true
    unread.onProgress?.()
  })
  req.once('error', () => undefined)
  return unread
}

/** Hands the body over as it arrives: the request is itself a readable with backpressure. */
export function streamBody(req: IncomingMessage): BodyStream {
  return {
    readable: req,
    drop() {
      req.unpipe()
      return dropBody(req)
    },
  }
}
