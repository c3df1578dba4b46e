import { readFile, stat } from 'node:fs/promises'
import { asFields, InputError, optionalString, requireString } from '../../input.js'
import { capOutput } from '../../output-cap.js'
import { textResult, type ToolResult } from '../../types.js'
import { isBinary } from '../binary.js'
import { throwIfAborted, type ToolContext } from '../context.js'
import { displayPath, resolvePath } from '../paths.js'
import { walk, type WalkStats } from '../walk.js'

const MAX_MATCHES = 1_000
const MAX_LINE_CHARS = 500
const MAX_FILE_BYTES = 10 * 1024 * 1024
const MAX_VISITED = 200_000
const SKIP_DIRS = new Set(['.git', 'node_modules'])

export async function grepTool(input: unknown, ctx: ToolContext): Promise<ToolResult> {
  const o = asFields(input)
  const source = requireString(o, 'pattern', { nonEmpty: true })
  let re: RegExp
  try {
    // No flags: a stateless RegExp, so .test() needs no lastIndex resets between lines.
    re = new RegExp(source)
  } catch (err) {
    throw new InputError(`invalid regular expression: ${(err as Error).message}`)
  }
  const target = resolvePath(ctx.workdir, optionalString(o, 'path') ?? '.')
  const st = await stat(target) // ENOENT becomes a "not found" error result upstream

  const files: string[] = []
  const stats: WalkStats = { visited: 0, truncated: false }
  if (st.isDirectory()) {
    const opts = { skipDir: (n: string) => SKIP_DIRS.has(n), maxEntries: MAX_VISITED, signal: ctx.signal }
    for await (const e of walk(target, opts, stats)) if (!e.isDir) files.push(e.abs)
  } else {
    files.push(target)
  }

  const out: string[] = []
  let matches = 0
  let skippedLarge = 0
  search: for (const file of files) {
    throwIfAborted(ctx.signal)
    const fst = await stat(file).catch(() => null)
    if (!fst?.isFile()) continue
    if (fst.size > MAX_FILE_BYTES) {
      skippedLarge++
      continue
    }
    const buf = await readFile(file).catch(() => null)
    if (!buf || isBinary(buf)) continue
    const shown = displayPath(ctx.workdir, file)
    const lines = buf.toString('utf8').split(/\r?\n/)
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i] ?? ''
      if (!re.test(line)) continue
      const text = line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)}…` : line
      out.push(`${shown}:${i + 1}:${text}`)
      if (++matches >= MAX_MATCHES) break search
    }
  }

  if (out.length === 0) out.push('No matches found.')
  if (matches >= MAX_MATCHES) out.push(`[stopped after ${MAX_MATCHES} matches; narrow the pattern or path]`)
  if (skippedLarge > 0) out.push(`[skipped ${skippedLarge} file(s) larger than ${MAX_FILE_BYTES} bytes]`)
  if (stats.truncated) out.push(`[search stopped after ${MAX_VISITED} entries; narrow the path]`)
  return textResult(capOutput(out.join('\n'), ctx.maxOutputChars))
}
