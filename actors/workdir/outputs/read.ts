import { createHash } from 'node:crypto'
import type { FileHandle } from 'node:fs/promises'
import { CHUNK_BYTES } from '../../kit/index.js'

/**
 * Reading an output file through the descriptor the walk opened (walk.ts), never by its path again, and never
 * past the size it had when it was opened: a file that grows while read is published as it was then.
 */

/** SHA-256 (hex) of the first `size` bytes; undefined when the file holds fewer now (it shrank) or `alive` turns false. */
export async function hashOf(fh: FileHandle, size: number, alive: () => boolean): Promise<string | undefined> {
  const sha = createHash('sha256')
  const buf = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, Math.max(size, 1)))
  for (let at = 0; at < size; ) {
    if (!alive()) return undefined
    const { bytesRead } = await fh.read(buf, 0, Math.min(buf.length, size - at), at)
    if (bytesRead === 0) return undefined
    sha.update(buf.subarray(0, bytesRead))
    at += bytesRead
  }
  return sha.digest('hex')
}

/**
 * The first `size` bytes as a stream the object store pulls, one chunk at a time. It errors (and the store keeps
 * nothing) when they are not the bytes `sha256` was taken of: the file changed between the two reads.
 */
export function bytesOf(fh: FileHandle, size: number, sha256: string, alive: () => boolean): ReadableStream<Uint8Array> {
  const sha = createHash('sha256')
  let at = 0
  return new ReadableStream<Uint8Array>(
    {
      async pull(c) {
        if (!alive()) return c.error(new Error('the session actor stopped'))
        if (at >= size) {
          if (sha.digest('hex') !== sha256) return c.error(new Error('the file changed while it was being published'))
          return c.close()
        }
        // A fresh buffer each time: the store may still hold the last one.
        const buf = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, size - at))
        const { bytesRead } = await fh.read(buf, 0, buf.length, at)
        if (bytesRead === 0) return c.error(new Error('the file shrank while it was being published'))
        const chunk = buf.subarray(0, bytesRead)
        sha.update(chunk)
        at += bytesRead
        c.enqueue(chunk)
      },
    },
    { highWaterMark: 0 },
  )
}
