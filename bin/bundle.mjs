// Bundles the compiled CLI into one file, dist/troupe.mjs (bin/build.mjs runs it after tsc): a server then loads one
// module instead of some 300 (our files and the pure-JavaScript packages), which measured about 0.9 s less CPU per
// `troupe serve` start on a 2-core machine. The tsc output beside it stays: worker threads (piscina's parse, skill
// and unpack pools) and the sandbox's tool server load their own files from dist/, as without the bundle.
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { build } from 'esbuild'
import { DIST } from './dist.mjs'

export const BUNDLE = path.join(DIST, 'troupe.mjs')

/**
 * Packages left to node's own loading: each finds files beside itself at run time (a native addon, a worker script,
 * an executable), which a bundle would cut it off from.
 */
const EXTERNAL = [
  'uWebSockets.js',
  'node-pty',
  'msgpackr-extract',
  'fs-native-extensions',
  'piscina',
  'pino',
  'pino-pretty',
  'esbuild',
  '@anthropic-ai/sandbox-runtime',
]

/**
 * Each of our modules keeps its own `import.meta.url` (that of its compiled copy in dist/), so what it finds beside
 * itself (a worker file, nats.conf, package.json, a package through createRequire) is found as without the bundle.
 */
const ownUrls = {
  name: 'own-import-meta-url',
  setup(b) {
    b.onLoad({ filter: /\.js$/ }, async (args) => {
      const rel = path.relative(DIST, args.path)
      if (rel.startsWith('..')) return undefined
      const source = await readFile(args.path, 'utf8')
      const url = `new URL(${JSON.stringify(`./${rel.split(path.sep).join('/')}`)}, import.meta.url).href`
      return { contents: source.replaceAll('import.meta.url', url), loader: 'js' }
    })
  },
}

/** Writes dist/troupe.mjs from tsc's dist/supervisor/cli.js and what it imports; throws on a bundling error. */
export async function bundle() {
  await build({
    entryPoints: [path.join(DIST, 'supervisor/cli.js')],
    outfile: BUNDLE,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    external: EXTERNAL,
    // The CommonJS packages bundled in call require() for node's own modules: give the ESM bundle one.
    banner: { js: "import { createRequire as troupeRequire } from 'node:module'\nconst require = troupeRequire(import.meta.url)" },
    plugins: [ownUrls],
    logLevel: 'error',
  })
}
