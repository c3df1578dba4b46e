import { mkdir, stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { asFields, requireString } from '../../input.js'
import { textResult, type ToolResult } from '../../types.js'
import type { ToolContext } from '../context.js'
import { resolvePath } from '../paths.js'

export async function writeTool(input: unknown, ctx: ToolContext): Promise<ToolResult> {
  const o = asFields(input)
  const filePath = requireString(o, 'file_path', { nonEmpty: true })
  const content = requireString(o, 'content')
  const abs = resolvePath(ctx.workdir, filePath)
  await mkdir(path.dirname(abs), { recursive: true })
  const existed = (await stat(abs).catch(() => null)) !== null
  await writeFile(abs, content, 'utf8')
  const bytes = Buffer.byteLength(content, 'utf8')
  return textResult(`${existed ? 'Overwrote' : 'Created'} ${filePath} (${bytes} bytes).`)
}
