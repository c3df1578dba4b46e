/**
 * File bytes, as the gateway moves them: it imports only protocol/, so the supervisor hands it an implementation
 * (actors/file/bytes.ts, over the JetStream object store). Neither side ever holds a whole file.
 */
export interface FileBytes {
  /**
   * Stores `body` under `id`, reading it as the store takes it. Resolves with the size once the object is complete;
   * rejects (and leaves no object) when `body` errors or the store fails.
   */
  put(id: string, body: ReadableStream<Uint8Array>): Promise<{ size: number }>
  /** Removes the bytes stored under `id`, if any. */
  discard(id: string): Promise<void>
  /** The stored bytes of `id` in order, read from the store as the caller takes them; undefined when there is none. */
  read(id: string): Promise<AsyncIterable<Uint8Array> | undefined>
}

/** The largest file accepted, by default (`TROUPE_FILE_MAX_MIB`). */
export const DEFAULT_FILE_MAX_BYTES = 500 * 1024 * 1024
