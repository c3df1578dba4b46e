/**
 * The file tools' process inside a sandbox (`node tool-server.mjs <maxOutputChars>`, bundled by bundle.ts). It runs
 * read, write, edit, glob and grep against the sandbox's own filesystem, so every path and every symlink resolves
 * inside it, never on the host. One JSON object a line each way: in `{id, name, input}` or `{id, abort: true}`, out
 * `{id, result}`. Imports only node built-ins and the shared tool code.
 */
import { createInterface } from 'node:readline'
import { isFileToolName, runFileTool } from '../host/file-tools.js'
import { errorResult } from '../types.js'
import type { ToolRequest, ToolResponse } from './tool-wire.js'

const maxOutputChars = Number(process.argv[2])
const running = new Map<number, AbortController>()

function reply(msg: ToolResponse): void {
  process.stdout.write(`${JSON.stringify(msg)}\n`)
}

async function serve(req: ToolRequest): Promise<void> {
  if ('abort' in req) {
    running.get(req.id)?.abort()
    return
  }
  if (!isFileToolName(req.name)) {
    reply({ id: req.id, result: errorResult(`Unknown file tool "${req.name}".`) })
    return
  }
  const ac = new AbortController()
  running.set(req.id, ac)
  try {
    reply({ id: req.id, result: await runFileTool(req.name, req.input, { workdir: process.cwd(), maxOutputChars, signal: ac.signal }) })
  } finally {
    running.delete(req.id)
  }
}

createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY }).on('line', (line) => {
  void serve(JSON.parse(line) as ToolRequest)
})
// The server closed our stdin: it is done with this sandbox.
process.stdin.on('end', () => process.exit(0))
