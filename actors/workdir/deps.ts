import type { JetStreamClient } from '@nats-io/jetstream'
import type { Kvm } from '@nats-io/kv'
import { Objm } from '@nats-io/obj'
import type { Logger } from 'pino'
import { DEFAULT_FILE_MAX_BYTES } from '../../protocol/files.js'
import { Buckets, ObjectStores } from '../../protocol/subjects.js'
import type { SandboxBackend } from '../../sandbox/index.js'
import { fileBytes, type FileReader, fileReader } from '../file/index.js'
import { type ActorClient, openBucket, openObjectStore, type Storage } from '../kit/index.js'
import { memoryContents } from '../memory/index.js'
import { type MemoryAccess, memoryAccess } from './memory/index.js'
import { SessionOutputs } from './outputs/index.js'
import type { SkillBundles } from './skills/index.js'
import { DEFAULT_WORKSPACE_BOUNDS, WorkspaceStore } from './workspace/index.js'

/** How a host's session sandboxes behave (part of the session tuning, `HostSettings.session`). */
export interface WorkdirSettings {
  /** A session whose shell is live stays in memory this long after its last work. Default 10 min. */
  shellIdleMs: number
  /** Files, directories and links a workspace may hold and still be saved for a move. Default 10,000. */
  workspaceMaxEntries: number
  /** Bytes of files a workspace may hold and still be saved. Default 1 GiB. */
  workspaceMaxBytes: number
}

export const DEFAULT_WORKDIR_SETTINGS: WorkdirSettings = {
  shellIdleMs: 10 * 60_000,
  workspaceMaxEntries: DEFAULT_WORKSPACE_BOUNDS.maxEntries,
  workspaceMaxBytes: DEFAULT_WORKSPACE_BOUNDS.maxBytes,
}

/** What the session sandboxes of one process share, on a session host or a sandbox host alike. */
export interface WorkdirDeps {
  /** Sessions' directories are `<dataDir>/sessions/<id>`. */
  dataDir: string
  /** The host's sandbox backend; undefined: the local one. */
  backend: SandboxBackend | undefined
  log: Logger
  settings: WorkdirSettings
  /** Reads a session's resource copies as they are mounted (mounts.ts). */
  files: FileReader
  /** Reads skill bundles from `troupe_skill_bundles` as they are unpacked (skills/mounts.ts). */
  bundles: SkillBundles
  /** Publishes what sessions write to their outputs folder as Files (outputs/outputs.ts). */
  outputs: SessionOutputs
  /** Where workspaces are saved for a move to another host. */
  workspaces: WorkspaceStore
  /** The memory stores sessions mount (memory/mounts.ts): their indexes, their contents, and the sessions' writes. */
  memory: MemoryAccess
}

export interface WorkdirDepsOptions {
  js: JetStreamClient
  kvm: Kvm
  storage: Storage
  /** Calls the file kind (outputs are published as Files, resource copies read) and memory stores' owners. */
  client: ActorClient
  log: Logger
  dataDir: string
  backend: SandboxBackend | undefined
  /** Default DEFAULT_WORKDIR_SETTINGS. */
  settings?: Partial<WorkdirSettings>
  /** The largest output published (`TROUPE_FILE_MAX_MIB`). Default 500 MiB. */
  fileMaxBytes?: number
}

/** Opens what a process's session sandboxes need from NATS: the same on a session host and a sandbox host. */
export async function workdirDeps(o: WorkdirDepsOptions): Promise<WorkdirDeps> {
  const bytes = fileBytes(o.js)
  return {
    dataDir: o.dataDir,
    backend: o.backend,
    log: o.log,
    settings: { ...DEFAULT_WORKDIR_SETTINGS, ...o.settings },
    files: fileReader(o.client, bytes),
    bundles: fileBytes(o.js, ObjectStores.skills),
    outputs: new SessionOutputs({
      kv: await openBucket(o.kvm, o.storage, Buckets.sessionOutputs),
      bytes,
      client: o.client,
      log: o.log,
      dataDir: o.dataDir,
      maxFileBytes: o.fileMaxBytes ?? DEFAULT_FILE_MAX_BYTES,
    }),
    workspaces: new WorkspaceStore(o.js, o.storage.jsm, await openObjectStore(new Objm(o.js), o.storage, ObjectStores.workspaces)),
    memory: memoryAccess(o.client, await memoryContents({ kvm: o.kvm, storage: o.storage, js: o.js })),
  }
}
