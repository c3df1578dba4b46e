import { stat } from 'node:fs/promises'
import path from 'node:path'
import { asFields, optionalString, requireString } from '../../input.js'
import { capOutput } from '../../output-cap.js'
import { errorResult, textResult, type ToolResult } from '../../types.js'
import type { ToolContext } from '../context.js'
import { globToRegExp, maxSegments, staticPrefix } from '../glob-pattern.js'
import { resolvePath } from '../paths.js'
import { walk, type WalkStats } from '../walk.js'

const MAX_RESULTS = 500
const MAX_VISITED = 200_000
const NOISY_DIRS = ['.git', 'node_modules']

export async function globTool(input: unknown, ctx: ToolContext): Promise<ToolResult> {
  const o = asFields(input)
  const rawPattern = requireString(o, 'pattern', { nonEmpty: true })
  const root = resolvePath(ctx.workdir, optionalString(o, 'path') ?? '.')
  const rootStat = await stat(root).catch(() => null)
  if (!rootStat?.isDirectory()) return errorResult(`Not a directory: ${root}`)

  // An absolute pattern searches from "/" and reports absolute paths.
  const absolute = path.isAbsolute(rawPattern)
  const base = absolute ? path.parse(rawPattern).root : root
  const pattern = absolute ? rawPattern.slice(base.length) : rawPattern.replace(/^\.\//, '')
  const matcher = globToRegExp(pattern)
  const { prefix, rest } = staticPrefix(pattern)
  const start = path.join(base, prefix)
  const named = new Set(pattern.split('/'))
  const stats: WalkStats = { visited: 0, truncated: false }

  const matches: Array<{ shown: string; abs: string }> = []
  for await (const e of walk(
    start,
    {
      skipDir: (name) => NOISY_DIRS.includes(name) && !named.has(name),
      maxDepth: maxSegments(rest),
      maxEntries: MAX_VISITED,
      signal: ctx.signal,
    },
    stats,
  )) {
    const rel = prefix === '' ? e.rel : `${prefix}/${e.rel}`
    if (!matcher.test(rel)) continue
    const shown = absolute ? path.join(base, rel) : rel
    matches.push({ shown: e.isDir ? `${shown}/` : shown, abs: e.abs })
  }

  const withTimes = await Promise.all(matches.map(async (m) => ({ ...m, mtime: (await stat(m.abs).catch(() => null))?.mtimeMs ?? 0 })))
  // Newest first: the files an agent just touched are usually the ones it is looking for.
  withTimes.sort((a, b) => b.mtime - a.mtime || (a.shown < b.shown ? -1 : 1))

  const lines = withTimes.slice(0, MAX_RESULTS).map((m) => m.shown)
  if (lines.length === 0) lines.push('No files matched.')
  if (withTimes.length > MAX_RESULTS) {
    lines.push(`[showing ${MAX_RESULTS} of ${withTimes.length} matches, newest first; narrow the pattern to see the rest]`)
  }
  if (stats.truncated) {
    lines.push(`[search stopped after ${MAX_VISITED} entries; narrow the pattern or path]`)
  }
  return textResult(capOutput(lines.join('\n'), ctx.maxOutputChars))
}
