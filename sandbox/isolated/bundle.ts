import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

let bundled: Promise<string> | undefined

/**
 * The tool server as one self-contained ES module (text), built once per process with esbuild from the source beside
 * this file (tool-server.ts under tsx, tool-server.js in dist/). One file is all a sandbox gets of this program: it
 * never sees the server's checkout.
 */
export function toolServerBundle(): Promise<string> {
  bundled ??= (async () => {
    const { build } = await import('esbuild')
    const entry = ['tool-server.ts', 'tool-server.js'].map((f) => fileURLToPath(new URL(f, import.meta.url))).find((f) => existsSync(f))
    if (!entry) throw new Error('the sandbox tool server source (sandbox/isolated/tool-server.ts) is missing')
    const out = await build({ entryPoints: [entry], bundle: true, platform: 'node', format: 'esm', target: 'node20', write: false, logLevel: 'silent' })
    const file = out.outputFiles[0]
    if (!file) throw new Error('esbuild produced no tool server bundle')
    return file.text
  })()
  bundled.catch(() => {
    bundled = undefined
  })
  return bundled
}
