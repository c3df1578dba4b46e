import type { HttpResponse } from 'uWebSockets.js'
import { Readable } from 'node:stream'
import type { BodyResult, BodyStream, Unread } from '../../transport.js'
import type { Life } from '../life.js'

/**
 * Reads the request body up to `limit` bytes. Past the limit (declared, or counted while reading) it stops keeping
 * chunks at once and reports `too_large`, so a huge upload costs no memory; what still comes is dropped.
 */
export function readBody(res: HttpResponse, life: Life, limit: number, declared: number | undefined): Promise<BodyResult> {
  if (declared !== undefined && declared > limit) return Promise.resolve({ ok: false, reason: 'too_large', unread: dropBody(res) })
  if (life.aborted) return Promise.resolve({ ok: false, reason: 'aborted' })
  return new Promise((resolve) => {
    const aborted = () => resolve({ ok: false, reason: 'aborted' })
    life.hooks.add(aborted)
    // A declared length is copied once, into its place; a chunked body is gathered, then joined.
    let whole = declared !== undefined ? Buffer.allocUnsafe(declared) : undefined
    const chunks: Buffer[] = []
    let size = 0
    let unread: Unread | undefined
    res.onData((chunk, isLast) => {
      if (unread) return dropped(unread, chunk, isLast)
      if (size + chunk.byteLength > limit) {
        chunks.length = 0
        whole = undefined
        unread = { ended: isLast, dropped: 0 }
        life.hooks.delete(aborted)
        resolve({ ok: false, reason: 'too_large', unread })
        return
      }
      // uWS reuses the chunk's memory after this callback returns: copy it.
      if (whole && size + chunk.byteLength <= whole.length) whole.set(new Uint8Array(chunk), size)
      else {
        // More than declared (a length uWS did not frame the body by): gather from here on.
        if (whole) chunks.push(whole.subarray(0, size))
        whole = undefined
        chunks.push(Buffer.from(new Uint8Array(chunk)))
      }
      size += chunk.byteLength
      if (!isLast) return
      life.hooks.delete(aborted)
      resolve({ ok: true, bytes: whole ? whole.subarray(0, size) : chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size) })
    })
  })
}

/**
 * Drops a body that will not be read at all. Call it before the uWS handler returns: chunks that arrive while no
 * handler is registered are lost, and with them the end of the body.
 */
export function dropBody(res: HttpResponse): Unread {
  const unread: Unread = { ended: false, dropped: 0 }
  res.onData((chunk, isLast) => dropped(unread, chunk, isLast))
  return unread
}

function dropped(unread: Unread, chunk: ArrayBuffer, isLast: boolean): void {
  unread.dropped += chunk.byteLength
  if (isLast) unread.ended = true
  unread.onProgress?.()
}

/**
 * Hands the body over as it arrives: uWS is paused while the reader holds more than its high-water mark, and resumed
 * when it asks for more. Register it before the uWS handler returns (as `readBody`).
 */
export function streamBody(res: HttpResponse, life: Life): BodyStream {
  let unread: Unread | undefined
  let ended = false
  let paused = false
  // Only ever a change: uWS resets the connection on a resume of a response it never paused. It throws on a response
  // it already invalidated; a pause or resume then has nothing left to do.
  const flow = (on: boolean) => {
    if (life.aborted || paused !== on) return
    paused = !on
    try {
      on ? res.resume() : res.pause()
    } catch {}
  }
  const readable = new Readable({ read: () => flow(true) })
  res.onData((chunk, isLast) => {
    if (unread) return dropped(unread, chunk, isLast)
    if (isLast) ended = true
    // uWS reuses the chunk's memory after this callback returns: copy it.
    if (chunk.byteLength && !readable.push(Buffer.from(new Uint8Array(chunk))) && !isLast) flow(false)
    if (!isLast) return
    readable.push(null)
    // A paused socket reads nothing, the next request on the connection included: never leave it paused.
    flow(true)
  })
  life.hooks.add(() => {
    if (!ended) readable.destroy(new Error('the client went away before the body ended'))
  })
  return {
    readable,
    drop() {
      unread ??= { ended, dropped: 0 }
      flow(true)
      return unread
    },
  }
}
