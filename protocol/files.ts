import { newSuffix } from './ids.js'

/** An object as the store completed it: its size and the SHA-256 digest the store computed (`SHA-256=<base64url>`, padded). */
export interface StoredObject {
  size: number
  digest: string
}

/**
 * File bytes, as the gateway moves them: it imports only protocol/, so the supervisor hands it an implementation
 * (actors/file/bytes.ts, over the JetStream object store). Neither side ever holds a whole file. Everything here is by
 * object name: which object holds a file's bytes is its record's to say (the file kind's `content`).
 */
/** What a download's headers are made of: a file's metadata, or a skill version's bundle. */
export interface Downloadable {
  id: string
  filename: string
  mime_type: string
  size_bytes: number
}

export interface FileBytes {
  /**
   * Stores `body` as the object `object`, reading it as the store takes it. Resolves once the object is complete;
   * rejects (and leaves no object) when `body` errors or the store fails.
   */
  put(object: string, body: ReadableStream<Uint8Array>): Promise<StoredObject>
  /** Removes the object, if there is one. */
  discard(object: string): Promise<void>
  /** The object's bytes in order, read from the store as the caller takes them; undefined when there is none. */
  read(object: string): Promise<AsyncIterable<Uint8Array> | undefined>
}

/**
 * The object an upload attempt stores its bytes under: its file's id, a `.` (which no id holds, so it never names
 * another file's object) and a fresh suffix. No two attempts share one (a retry, two uploads racing with one
 * Idempotency-Key): the record names the object of the attempt that wrote it, and no other attempt can overwrite it.
 */
export const uploadObjectName = (fileId: string): string => `${fileId}.${newSuffix()}`

/** Whether `object` could be an upload attempt's object for the file `fileId` (`uploadObjectName`'s shape). */
export const isUploadObjectOf = (fileId: string, object: string): boolean =>
  object.startsWith(`${fileId}.`) && /^[0-9A-Z]{26}$/.test(object.slice(fileId.length + 1))

/** The largest file accepted, by default (`TROUPE_FILE_MAX_MIB`). */
export const DEFAULT_FILE_MAX_BYTES = 500 * 1024 * 1024
