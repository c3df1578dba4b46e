import type { BigIntStats } from 'node:fs'
import { idFromKey } from '../../../protocol/ids.js'

/**
 * What of a session's outputs folder is published, by path relative to the folder: one record per session,
 * `outputs.<session id>` in `troupe_session_outputs`, written by the session's owner after a pass that published
 * something, and deleted with the session.
 */
export interface OutputsState {
  files: Record<string, PublishedOutput>
}

export interface PublishedOutput {
  /** The File of the path's latest publish. */
  file_id: string
  /** SHA-256 (hex) of the bytes it published. */
  sha256: string
  /** How many times the path was published: the next publish's File id differs, even for bytes published before. */
  n: number
  /** `stat` of the file when it was read (`identityOf`): the same next pass means unchanged, and it is not read. */
  identity: string
}

export const outputsKey = (session: string) => `outputs.${session}`

/**
 * The File id of the `n`th publish of `rel`'s bytes `sha256`: a pass repeated after a crash (the state not yet saved)
 * names the same File, stores its bytes over the same object and finds its record, so nothing is published twice.
 */
export const outputFileId = (session: string, rel: string, n: number, sha256: string) =>
  idFromKey('file', 'session_output', `${session}\n${n}\n${sha256}\n${rel}`)

/** A file changed this recently may change again within the same clock tick: its identity is not trusted next pass. */
export const SETTLED_MS = 2_000

/**
 * A file's identity as `stat` gives it: device, inode, size, modification and change times (ns). The change time
 * cannot be set by the agent (utimes sets it too), so equal identities mean equal bytes. `asOf`: the pass's start; a
 * file changed less than SETTLED_MS before it gets an identity no later stat equals, so the next pass reads it again
 * (a same-size write within the clock's granularity leaves the times as they were).
 */
export function identityOf(s: BigIntStats, asOf?: number): string {
  if (asOf !== undefined && Number(s.ctimeNs / 1_000_000n) > asOf - SETTLED_MS) return ''
  return `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`
}
