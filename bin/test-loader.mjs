// `--import` for test processes (package.json's tap `node-arg`): loads the project's TypeScript compiled once per
// source version, from a cache beside node_modules, instead of through tsx. tsx costs each process about a second of
// CPU at start (its loader thread, its esbuild service) before it loads one module; a test run starts some 200
// processes. Servers the tests start run the way users start them (bin/troupe.mjs), not through this.
import { register } from 'node:module'

register('./test-loader-hooks.mjs', import.meta.url)
