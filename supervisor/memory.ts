// Process-wide memory settings, applied by supervisor/cli.ts before anything else is loaded.
import v8 from 'node:v8'

// V8 grows the old generation by up to 4x between full collections and keeps the pages it grew into: creating
// 10,000 sessions left a `serve` holding ~140 MB of old space for ~80 MB live. Growing by at most 50 % costs a few
// more full collections (concurrent, a few ms of main thread each). An operator's own
// `node --heap-growing-percent=N bin/troupe.mjs` wins (0: V8's default; NODE_OPTIONS cannot carry this flag).
if (!process.execArgv.some((a) => /^--heap[-_]growing[-_]percent/.test(a))) {
  v8.setFlagsFromString('--heap-growing-percent=50')
}
