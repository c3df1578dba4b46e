import type { FileMetadata } from '../../protocol/schemas/file.js'

/**
 * What the bucket holds per file: its wire form (every file we store is downloadable: it is bytes a client gave, or a
 * copy of them), and for a session resource's copy the resource it was made for (never shown: `view`), so that a copy
 * whose resource never came to be can be found and swept (sweep.ts).
 */
export type StoredFile = FileMetadata & { resource_id?: string }

export const FILE_PREFIX = 'file.'
export const fileKey = (id: string) => `${FILE_PREFIX}${id}`

/** The wire form of a stored file. */
export function view(f: StoredFile): FileMetadata {
  const { resource_id: _, ...file } = f
  return file
}
