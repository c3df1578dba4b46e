import { mkdirSync } from 'node:fs'
import path from 'node:path'
import { BUILTIN_TOOL_NAMES, isBuiltinToolName } from '../definitions.js'
import { InputError } from '../input.js'
import { DEFAULT_BASH_TIMEOUT_MS, DEFAULT_MAX_OUTPUT_CHARS, errorResult, type Sandbox, type SandboxOptions, type ToolResult } from '../types.js'
import { InterruptedError, type ToolContext } from './context.js'
import { shellEnv } from './env.js'
import { PersistentShell } from './shell.js'
import { bashTool } from './tools/bash.js'
import { editTool } from './tools/edit.js'
import { globTool } from './tools/glob.js'
import { grepTool } from './tools/grep.js'
import { readTool } from './tools/read.js'
import { writeTool } from './tools/write.js'

const INTERRUPTED = 'Interrupted: the tool call was aborted before it finished.'

/**
 * Built-in tools running directly on the server host, as the server's user.
 * This backend is NOT an isolation boundary: paths may point anywhere and bash can do
 * anything the server process can. It suits single-tenant or development deployments.
 */
export function createHostSandbox(opts: SandboxOptions): Sandbox {
  const workdir = path.resolve(opts.workdir)
  mkdirSync(workdir, { recursive: true })
  const maxOutputChars = opts.maxOutputChars ?? DEFAULT_MAX_OUTPUT_CHARS
  const defaultTimeoutMs = opts.bashTimeoutMs ?? DEFAULT_BASH_TIMEOUT_MS
  const shell = new PersistentShell({
    cwd: workdir,
    env: shellEnv(opts.env),
    // Keep more than the cap so the "showed N of M" note can count what cleaning removes.
    retainChars: Math.max(maxOutputChars * 4, 256 * 1024),
  })
  let closed = false

  async function run(name: string, input: unknown, signal?: AbortSignal): Promise<ToolResult> {
    if (closed) return errorResult('The sandbox is closed.')
    if (!isBuiltinToolName(name)) {
      return errorResult(`Unknown tool "${name}". Built-in tools: ${BUILTIN_TOOL_NAMES.join(', ')}.`)
    }
    if (signal?.aborted) return errorResult(INTERRUPTED)
    const ctx: ToolContext = { workdir, maxOutputChars, signal }
    try {
      switch (name) {
        case 'bash':
          return await bashTool(input, { ...ctx, shell, defaultTimeoutMs })
        case 'read':
          return await readTool(input, ctx)
        case 'write':
          return await writeTool(input, ctx)
        case 'edit':
          return await editTool(input, ctx)
        case 'glob':
          return await globTool(input, ctx)
        case 'grep':
          return await grepTool(input, ctx)
      }
    } catch (err) {
      return errorResult(describeError(name, err))
    }
  }

  async function close(): Promise<void> {
    closed = true
    await shell.close()
  }

  return { run, close }
}

function describeError(tool: string, err: unknown): string {
  if (err instanceof InputError) return `Invalid input for ${tool}: ${err.message}`
  if (err instanceof InterruptedError) return INTERRUPTED
  const e = err as NodeJS.ErrnoException
  const where = e.path ?? ''
  switch (e.code) {
    case 'ENOENT':
      return `No such file or directory: ${where}`
    case 'EACCES':
    case 'EPERM':
      return `Permission denied: ${where}`
    case 'EISDIR':
      return `Is a directory: ${where}`
    case 'ENOTDIR':
      return `Not a directory: ${where}`
  }
  return `${tool} failed: ${e.message ?? String(err)}`
}
