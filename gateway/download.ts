import type { Downloadable } from '../protocol/files.js'
import type { ResponseState } from './http.js'
import type { Exchange, Headers } from './transport.js'

/** The headers of a file's bytes: its stored type, and its name encoded so no byte of it can reach the header raw. */
export function downloadHeaders(file: Downloadable, rid: string): Headers {
  return {
    'content-type': file.mime_type,
    'content-disposition': `attachment; filename*=UTF-8''${encodeURIComponent(file.filename)}`,
    'request-id': rid,
  }
}

/**
 * Streams a file's bytes as the client takes them: the next chunk is read from the store only once the transport
 * has taken the last. A failure midway (the store, a digest mismatch) closes the connection: the response was
 * promised `size_bytes` and a short one must not look whole; it then rejects, saying why. Resolves once the response
 * is complete or abandoned.
 */
export async function sendBytes(ex: Exchange, state: ResponseState, file: Downloadable, rid: string, chunks: AsyncIterable<Uint8Array>): Promise<void> {
  if (state.aborted || state.done) return
  state.done = true
  state.status = 200
  state.bytesOut = 0
  const out = ex.sized(200, downloadHeaders(file, rid), file.size_bytes)
  let wake: (() => void) | undefined
  state.onAbort = () => wake?.()
  out.onWritable(() => wake?.())
  try {
    for await (const chunk of chunks) {
      if (state.aborted) return
      state.bytesOut += chunk.byteLength
      if (!out.write(chunk)) await new Promise<void>((r) => (wake = r))
      wake = undefined
    }
    out.end()
  } catch (err) {
    ex.close()
    throw new Error(`download of ${file.id} cut short after ${state.bytesOut} of ${file.size_bytes} bytes`, { cause: err })
  }
}
