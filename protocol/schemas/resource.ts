import { type } from 'arktype'
import { limitParam, pageParam } from './common.js'
import { tagged } from './events.js'
import { FileId, MemoryStoreId } from './ids.js'
import { lazy } from './lazy.js'

/**
 * Session resources on the wire (WIRE §6 resource params, §9 the resources routes). Shapes only: whether a file
 * exists, whether two resources' mount paths collide and whether a resource kind can be provided at all are the
 * session actor's (actors/session/admission/admission.ts, resources.ts).
 */

/** Where file resources are mounted, read-only, inside a session's sandbox. */
export const UPLOADS_ROOT = '/mnt/session/uploads'

/** The longest mount path accepted; each of its segments is a file name, at most 255 bytes (NAME_MAX). */
const MAX_MOUNT_PATH = 1024
const MAX_SEGMENT_BYTES = 255

/** A file resource's mount path when it names none (WIRE §6). */
export const defaultMountPath = (fileId: string) => `${UPLOADS_ROOT}/${fileId}`

/** Two mount paths that cannot both be mounted: the same path, or one a directory above the other. */
export const mountsOverlap = (a: string, b: string) => a === b || a.startsWith(`${b}/`) || b.startsWith(`${a}/`)

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what it looks for.
const CONTROL = /[\u0000-\u001f\u007f]/

/** Why `p` is not a mount path, or undefined when it is one. */
function mountPathProblem(p: string): string | undefined {
  if (p.length > MAX_MOUNT_PATH) return `at most ${MAX_MOUNT_PATH} characters`
  if (!p.startsWith(`${UPLOADS_ROOT}/`)) return `an absolute path strictly beneath ${UPLOADS_ROOT}/ (file resources are mounted there, read-only)`
  if (CONTROL.test(p)) return 'a path without control characters'
  for (const seg of p.slice(UPLOADS_ROOT.length + 1).split('/')) {
    if (seg === '' || seg === '.' || seg === '..') return 'a normalised path (no empty, "." or ".." segments, no trailing slash)'
    if (Buffer.byteLength(seg) > MAX_SEGMENT_BYTES) return `a path whose segments are at most ${MAX_SEGMENT_BYTES} bytes each`
  }
  return undefined
}

export const MountPath = lazy(() =>
  type('string').narrow((p, ctx) => {
    const problem = mountPathProblem(p)
    return problem === undefined || ctx.reject({ expected: problem, actual: JSON.stringify(p.length > 80 ? `${p.slice(0, 80)}…` : p) })
  }),
)

/** `{type: "file", file_id, mount_path?}`: a file, copied for the session and mounted read-only. */
export const FileResourceParams = lazy(() => type({ '+': 'reject', type: "'file'", file_id: FileId, 'mount_path?': MountPath.or('null') }))

/** Where memory stores are mounted inside a session's sandbox, each in a directory named by its slug. */
export const MEMORY_ROOT = '/mnt/memory'

/** A memory store resource's `instructions`, in characters (the official client's docs). */
export const MAX_MEMORY_INSTRUCTIONS = 4096

/** How many memory stores one session attaches (SPEC limits table). */
export const MAX_SESSION_MEMORY_STORES = 8

/**
 * `{type: "memory_store", memory_store_id, access?, instructions?}` (WIRE §6, SPEC session resource inputs): attached
 * at creation only, mounted at `/mnt/memory/<slug>`.
 */
export const MemoryStoreResourceParams = lazy(() =>
  type({
    '+': 'reject',
    type: "'memory_store'",
    memory_store_id: MemoryStoreId,
    'access?': "'read_write' | 'read_only' | null",
    'instructions?': type(`string <= ${MAX_MEMORY_INSTRUCTIONS}`).or('null'),
  }),
)

/**
 * Any other `type` passes here: the actor answers 422 for kinds it cannot provide, which a shape error would hide.
 * The ids such a resource names are checked all the same: they must never reach a store unchecked.
 */
const OtherResourceParams = lazy(() => type({ '[string]': 'unknown', type: 'string > 0', 'memory_store_id?': MemoryStoreId }))

export type FileResourceParamsT = typeof FileResourceParams.infer
export type MemoryStoreResourceParamsT = typeof MemoryStoreResourceParams.infer
type OtherResourceParamsT = typeof OtherResourceParams.infer
export type ResourceParamsT = FileResourceParamsT | MemoryStoreResourceParamsT | OtherResourceParamsT

/** One resource of a session's or a deployment's `resources`: a file or a memory store is checked whole, other kinds by their ids. */
export const ResourceParams = lazy(() =>
  type('object')
    .narrow((v, ctx) => !Array.isArray(v) || ctx.mustBe('an object'))
    .pipe((v): ResourceParamsT | type.errors => {
      const kind = (v as { type?: unknown }).type
      if (kind === 'file') return FileResourceParams(v)
      if (kind === 'memory_store') return MemoryStoreResourceParams(v)
      return OtherResourceParams(v)
    }),
)

/** `POST /v1/sessions/{id}/resources`: files only (WIRE §9). */
export const ResourceAdd = lazy(() => tagged(['file'], FileResourceParams, '"file" (only files can be added to a session)'))

/** `POST /v1/sessions/{id}/resources/{resource_id}`: a token rotation, which only GitHub repositories take. */
export const ResourceUpdate = lazy(() => type({ '+': 'reject', authorization_token: 'string > 0' }))

export const ResourceListQuery = lazy(() => type({ 'limit?': limitParam(100), 'page?': pageParam }))

export type ResourceListInput = typeof ResourceListQuery.infer

/** WIRE §9 FileResource. */
export interface FileResource {
  id: string
  type: 'file'
  file_id: string
  mount_path: string
  created_at: string
  updated_at: string
}

/**
 * WIRE §9 MemoryStoreResource: no id and no timestamps (it is attached at creation and never changed); `name` and
 * `description` are snapshots of the store's when it was attached.
 */
export interface MemoryStoreResource {
  type: 'memory_store'
  memory_store_id: string
  access: 'read_write' | 'read_only'
  instructions: string | null
  name: string
  description: string
  mount_path: string
}

/** What a session's `resources` holds. */
export type SessionResource = FileResource | MemoryStoreResource

/** A session's file resources (those with ids, copies and a place beneath /mnt/session/uploads). */
export const fileResources = (all: readonly SessionResource[]): FileResource[] => all.filter((r): r is FileResource => r.type === 'file')

/** A session's memory store resources, in the order they were given. */
export const memoryResources = (all: readonly SessionResource[]): MemoryStoreResource[] =>
  all.filter((r): r is MemoryStoreResource => r.type === 'memory_store')

/** The most resources one session holds: as many as a deployment may give its runs' sessions. */
export const MAX_SESSION_RESOURCES = 500

/** Narrows a resource param to a file's (a union on `type` whose other branch takes any string cannot narrow itself). */
export const isFileParams = (r: ResourceParamsT): r is FileResourceParamsT => r.type === 'file'

/** Narrows a resource param to a memory store's. */
export const isMemoryStoreParams = (r: ResourceParamsT): r is MemoryStoreResourceParamsT => r.type === 'memory_store'

/** Where a file resource is mounted: its `mount_path`, or the default for its file. */
export const mountPathOf = (r: Pick<FileResourceParamsT, 'file_id' | 'mount_path'>) => r.mount_path ?? defaultMountPath(r.file_id)
