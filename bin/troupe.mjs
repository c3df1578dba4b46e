#!/usr/bin/env node
// Runs the JavaScript compiled to dist/ at `npm install` (bin/build.mjs) when it was compiled from exactly the
// current sources, else the TypeScript sources through tsx's loader: an edit runs at once, with no build step, and
// never an older build. The compiled path spares the process tsx's loader thread (its own V8 isolate on Node 20)
// and the transform of every module at start-up: about 45 MB less RSS; its one-file bundle of the CLI
// (dist/troupe.mjs) spares it loading some 300 modules one by one. TROUPE_FROM_SOURCE=1 forces tsx.
import { distIsCurrent } from './dist.mjs'

if (!process.env.TROUPE_FROM_SOURCE && distIsCurrent()) {
  await import('../dist/troupe.mjs')
} else {
  const { register } = await import('tsx/esm/api')
  register()
  await import('../supervisor/cli.ts')
}
