import type { HttpResponse } from 'uWebSockets.js'
import type { ResponseState } from './http.js'

export type BodyResult = { ok: true; bytes: Buffer } | { ok: false; reason: 'too_large' | 'aborted' }

/**
 * Reads the request body up to `limit` bytes. Past the limit it stops keeping chunks at once and reports
 * `too_large`, so a huge upload costs no memory; the caller answers 413 and closes the connection.
 */
export function readBody(res: HttpResponse, state: ResponseState, limit: number, declaredLength: number | undefined): Promise<BodyResult> {
  if (declaredLength !== undefined && declaredLength > limit) return Promise.resolve({ ok: false, reason: 'too_large' })
  return new Promise((resolve) => {
    state.onAbort = () => resolve({ ok: false, reason: 'aborted' })
    const chunks: Buffer[] = []
    let size = 0
    let over = false
    res.onData((chunk, isLast) => {
      if (over) return
      size += chunk.byteLength
      if (size > limit) {
        over = true
        chunks.length = 0
        resolve({ ok: false, reason: 'too_large' })
        return
      }
      // uWS reuses the chunk's memory after this callback returns: copy it.
      chunks.push(Buffer.from(new Uint8Array(chunk)))
      if (isLast) resolve({ ok: true, bytes: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size) })
    })
  })
}
