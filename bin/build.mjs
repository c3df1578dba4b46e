#!/usr/bin/env node
// `npm run build`, and `npm install` through the `prepare` script: compiles the TypeScript sources to dist/
// (tsconfig.build.json: types are stripped, not checked; `npm run typecheck` checks them), bundles the CLI from that
// into dist/troupe.mjs (bin/bundle.mjs), and stamps dist/ with the digest of the sources it was compiled from. bin/troupe.mjs runs dist/ only while that digest matches the sources,
// so an edit is never shadowed by an older build. Never fails the install: without dist/, troupe runs its sources
// through tsx.
import { spawnSync } from 'node:child_process'
import { renameSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { bundle } from './bundle.mjs'
import { DIST, ROOT, STAMP, sourceDigest } from './dist.mjs'

const skip = (why) => {
  rmSync(DIST, { recursive: true, force: true })
  console.warn(`troupe: no build (${why}); troupe will run its TypeScript sources through tsx`)
  process.exit(0)
}

// Taken before compiling: a file edited during the compile no longer matches the stamp, so that build goes unused.
const digest = sourceDigest()
// A clean dist/: a compiled file whose source was removed must not linger for a stale import to find.
rmSync(DIST, { recursive: true, force: true })
let tsc
try {
  tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
} catch {
  skip('typescript is not installed')
}
const run = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' })
if (run.status !== 0) skip(`tsc exited with ${run.status ?? run.signal}`)
try {
  await bundle()
} catch (err) {
  skip(`bundling failed: ${err instanceof Error ? err.message : String(err)}`)
}
writeFileSync(`${STAMP}.tmp`, `${digest}\n`)
renameSync(`${STAMP}.tmp`, STAMP)
