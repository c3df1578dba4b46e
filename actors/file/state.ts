import type { FileMetadata } from '../../protocol/schemas/file.js'

/**
 * What the bucket holds per file: its wire form (every file we store is downloadable: it is bytes a client gave, or a
 * copy of them), and, never shown (`view`):
 * - `object`: the object holding its bytes, for an upload (each attempt stores under a name of its own,
 *   protocol/files.ts#uploadObjectName); absent, the object named like the id (files uploaded before objects were
 *   named per attempt, session outputs, resource copies);
 * - `digest`: that object's SHA-256 as the store computed it, which with the size, name and type tells a retry of the
 *   upload from another upload under a reused Idempotency-Key;
 * - `resource_id`: for a session resource's copy, the resource it was made for, so that a copy whose resource never
 *   came to be can be found and swept (copies.ts).
 */
export type StoredFile = FileMetadata & { object?: string; digest?: string; resource_id?: string }

export const FILE_PREFIX = 'file.'
export const fileKey = (id: string) => `${FILE_PREFIX}${id}`

/** The object holding a file's bytes: the one its record names, else the one named like its id. */
export const objectOf = (f: StoredFile): string => f.object ?? f.id

/** The wire form of a stored file. */
export function view(f: StoredFile): FileMetadata {
  const { object: _o, digest: _d, resource_id: _r, ...file } = f
  return file
}
