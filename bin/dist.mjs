// The compiled copy of the TypeScript sources in dist/ (built by bin/build.mjs) and the test of whether it is current.
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
export const DIST = path.join(ROOT, 'dist')
/** Holds the digest of the sources dist/ was compiled from; written last, once the compile succeeded. */
export const STAMP = path.join(DIST, '.sources')
/** What tsconfig.build.json compiles, and the settings it compiles them with. */
const SOURCE_DIRS = ['protocol', 'metrics', 'gateway', 'actors', 'supervisor', 'sandbox']
const SETTINGS = ['tsconfig.json', 'tsconfig.build.json']

/** sha256 over the path and content of every source file: a changed, added or removed file changes it. Throws if a settings file is missing. */
export function sourceDigest() {
  const hash = createHash('sha256')
  const add = (rel) =>
    hash
      .update(`${rel}\0`)
      .update(readFileSync(path.join(ROOT, rel)))
      .update('\0')
  for (const rel of SETTINGS) add(rel)
  for (const dir of SOURCE_DIRS) {
    const files = readdirSync(path.join(ROOT, dir), { recursive: true })
      .filter((f) => f.endsWith('.ts'))
      .sort()
    for (const f of files) add(path.join(dir, f))
  }
  return hash.digest('hex')
}

/** Whether dist/ was compiled from exactly the sources as they are now. */
export function distIsCurrent() {
  try {
    return readFileSync(STAMP, 'utf8').trim() === sourceDigest()
  } catch {
    return false
  }
}
