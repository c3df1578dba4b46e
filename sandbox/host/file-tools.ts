import { InputError } from '../input.js'
import { errorResult, type ToolResult } from '../types.js'
import { InterruptedError, type ToolContext } from './context.js'
import { editTool } from './tools/edit.js'
import { globTool } from './tools/glob.js'
import { grepTool } from './tools/grep.js'
import { readTool } from './tools/read.js'
import { writeTool } from './tools/write.js'

export const INTERRUPTED = 'Interrupted: the tool call was aborted before it finished.'

const FILE_TOOLS = { read: readTool, write: writeTool, edit: editTool, glob: globTool, grep: grepTool } as const

export type FileToolName = keyof typeof FILE_TOOLS

export function isFileToolName(name: string): name is FileToolName {
  return Object.hasOwn(FILE_TOOLS, name)
}

/**
 * Runs one of the five file tools in this process, against this process's filesystem. Shared by the host backend
 * (the server's own process) and the isolated backend's tool server (a process inside the sandbox), so both give
 * the same results and errors.
 */
export async function runFileTool(name: FileToolName, input: unknown, ctx: ToolContext): Promise<ToolResult> {
  try {
    return await FILE_TOOLS[name](input, ctx)
  } catch (err) {
    return errorResult(describeToolError(name, err))
  }
}

export function describeToolError(tool: string, err: unknown): string {
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
    case 'EROFS':
      return `Read-only file system: ${where}`
  }
  return `${tool} failed: ${e.message ?? String(err)}`
}
