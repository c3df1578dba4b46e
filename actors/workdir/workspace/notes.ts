import type { Scan } from './files.js'
import type { Manifest, WorkspaceBounds } from './manifest.js'

/*
 * What the agent is told about its workspace, in the tool result of the call it concerns: a move restored it, it grew
 * past what is saved, the store did not answer.
 */

const iso = (ms: number) => new Date(ms).toISOString()
const asOf = (m: Manifest) => (m.gen ? `as it was saved at ${iso(m.at)}` : 'empty, as nothing of it was ever saved')
export const noteOf = (text: string) => ({ type: 'text' as const, text: `[workspace] ${text}` })

export function movedNote(m: Manifest): string {
  return (
    `This session moved to another host since its last tool call (a host stopped or failed). Its workspace was restored ${asOf(m)}, ` +
    'the end of the last tool call that completed before the move. Lost in the move: the shell (its working directory, ' +
    'environment variables, functions, aliases and history) and every process it had started, everything under /tmp, ' +
    'outputs not yet published, and whatever changed in the workspace after that tool call.'
  )
}

export function boundsNote(scan: Scan, b: WorkspaceBounds, m: Manifest): string {
  const what =
    scan.over === 'entries'
      ? `more than ${b.maxEntries} files, directories and links (TROUPE_WORKSPACE_MAX_FILES)`
      : `more than ${Math.round(b.maxBytes / 1024 / 1024)} MiB of files (TROUPE_WORKSPACE_MAX_MIB; a sparse file counts at its full length)`
  return (
    `The workspace holds ${what}, past what is saved, so it is no longer saved. If this session moves to another host ` +
    `(a host stops or fails), its workspace will be ${asOf(m)}, without anything changed since. Remove files to bring ` +
    'it back within the bound: it is saved again at the end of the next tool call that finds it so.'
  )
}

export function storeNote(err: Error, m: Manifest): string {
  return (
    `The workspace could not be saved: the store does not answer (${err.message}). The next tool call tries again; if ` +
    `this session moves to another host before then, its workspace will be ${asOf(m)}.`
  )
}
