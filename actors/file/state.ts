import type { FileMetadata } from '../../protocol/schemas/file.js'

/** What the bucket holds per file: its wire form (every file we store is downloadable: it is bytes a client gave). */
export type StoredFile = FileMetadata

export const FILE_PREFIX = 'file.'
export const fileKey = (id: string) => `${FILE_PREFIX}${id}`
