import { readFile, writeFile } from 'node:fs/promises'
import { asFields, InputError, optionalBoolean, requireString } from '../../input.js'
import { errorResult, textResult, type ToolResult } from '../../types.js'
import type { ToolContext } from '../context.js'
import { resolvePath } from '../paths.js'

export async function editTool(input: unknown, ctx: ToolContext): Promise<ToolResult> {
  const o = asFields(input)
  const filePath = requireString(o, 'file_path', { nonEmpty: true })
  const oldString = requireString(o, 'old_string', { nonEmpty: true })
  const newString = requireString(o, 'new_string')
  const replaceAll = optionalBoolean(o, 'replace_all') ?? false
  if (oldString === newString) throw new InputError('"old_string" and "new_string" are identical; nothing would change')

  const abs = resolvePath(ctx.workdir, filePath)
  const before = await readFile(abs, 'utf8')
  const count = countOccurrences(before, oldString)
  if (count === 0) {
    return errorResult(`old_string was not found in ${filePath}. It must match the file exactly, including whitespace and indentation.`)
  }
  if (count > 1 && !replaceAll) {
    return errorResult(
      `old_string occurs ${count} times in ${filePath}. Include more surrounding context to make it unique, ` +
        'or set replace_all to true to replace every occurrence.',
    )
  }
  // split/join rather than String.replace: a replacement string would interpret "$&", "$1", ….
  const after = replaceAll ? before.split(oldString).join(newString) : spliceFirst(before, oldString, newString)
  await writeFile(abs, after, 'utf8')
  return textResult(`Replaced ${count} occurrence${count === 1 ? '' : 's'} in ${filePath}.`)
}

function countOccurrences(haystack: string, needle: string): number {
  let count = 0
  for (let i = haystack.indexOf(needle); i !== -1; i = haystack.indexOf(needle, i + needle.length)) count++
  return count
}

function spliceFirst(s: string, needle: string, replacement: string): string {
  const i = s.indexOf(needle)
  return s.slice(0, i) + replacement + s.slice(i + needle.length)
}
