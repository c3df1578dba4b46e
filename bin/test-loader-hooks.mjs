// The test loader's hooks (test-loader.mjs): a `.ts` module is read from its compiled copy under node_modules/.cache/troupe-ts,
// compiled with esbuild (as tsx would: the project's tsconfig, an inline source map naming the source) when there is
// no copy of this version of it. Copies are written whole (a rename), so processes sharing the cache never
// read half of one. A relative `.js` import that names no file resolves to the `.ts` beside it, as under tsc.
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const CACHE = path.join(ROOT, 'node_modules/.cache/troupe-ts')
/** Changes whenever how a module is compiled changes (the options below, esbuild's version is in node_modules). */
const VERSION = 'esbuild-ts-1'

export function resolve(specifier, context, next) {
  if (/^\.{1,2}\//.test(specifier) && specifier.endsWith('.js') && context.parentURL?.endsWith('.ts')) {
    const ts = new URL(`${specifier.slice(0, -3)}.ts`, context.parentURL)
    if (existsSync(ts)) return { url: ts.href, format: 'module', shortCircuit: true }
  }
  return next(specifier, context)
}

export async function load(url, context, next) {
  if (!url.startsWith('file:') || !url.endsWith('.ts')) return next(url, context)
  const file = fileURLToPath(url)
  return { format: 'module', source: await compiled(file), shortCircuit: true }
}

/**
 * The compiled module for `file` (an absolute path). Its copy is named by a hash of the path and the source, so an
 * edit, or a checkout sharing these node_modules, never reads another version's copy.
 */
export async function compiled(file) {
  const source = readFileSync(file, 'utf8')
  const copy = path.join(CACHE, `${createHash('sha256').update(`${VERSION}\0${file}\0${source}`).digest('hex')}.js`)
  try {
    return readFileSync(copy, 'utf8')
  } catch {}
  const code = await compile(file, source)
  mkdirSync(CACHE, { recursive: true })
  const tmp = `${copy}.${process.pid}.${Math.random().toString(36).slice(2)}`
  writeFileSync(tmp, code)
  renameSync(tmp, copy)
  return code
}

let esbuild
const TSCONFIG = { compilerOptions: { verbatimModuleSyntax: true, target: 'ES2022' } }

async function compile(file, source) {
  esbuild ??= await import('esbuild')
  const { code } = await esbuild.transform(source, {
    loader: 'ts',
    format: 'esm',
    target: 'node20',
    platform: 'node',
    sourcemap: 'inline',
    sourcefile: file,
    tsconfigRaw: TSCONFIG,
  })
  return code
}
