import { mkdirSync } from 'node:fs'
import path from 'node:path'
import { toolSandbox } from '../dispatch.js'
import { DEFAULT_BASH_TIMEOUT_MS, DEFAULT_MAX_OUTPUT_CHARS, type Sandbox, type SandboxOptions } from '../types.js'
import { shellEnv } from './env.js'
import { runFileTool } from './file-tools.js'
import { PersistentShell } from './shell.js'
import { bashTool } from './tools/bash.js'

/**
 * Built-in tools running directly on the server host, as the server's user (`TROUPE_SANDBOX=local`).
 * This backend is NOT an isolation boundary: paths may point anywhere and bash can do
 * anything the server process can. It suits single-tenant or development deployments.
 */
export function createHostSandbox(opts: SandboxOptions): Sandbox {
  const workdir = path.resolve(opts.workdir)
  // outputs/ as in the isolated layout: what the agent writes there is published as Files (actors/workdir/outputs/outputs.ts).
  mkdirSync(path.join(workdir, 'outputs'), { recursive: true })
  const maxOutputChars = opts.maxOutputChars ?? DEFAULT_MAX_OUTPUT_CHARS
  const defaultTimeoutMs = opts.bashTimeoutMs ?? DEFAULT_BASH_TIMEOUT_MS
  const shell = new PersistentShell({
    cwd: workdir,
    env: shellEnv(opts.env),
    // Keep more than the cap so the "showed N of M" note can count what cleaning removes.
    retainChars: Math.max(maxOutputChars * 4, 256 * 1024),
  })
  return toolSandbox({
    bash: (input, signal) => bashTool(input, { workdir, maxOutputChars, signal, shell, defaultTimeoutMs }),
    file: (name, input, signal) => runFileTool(name, input, { workdir, maxOutputChars, signal }),
    close: () => shell.close(),
  })
}
