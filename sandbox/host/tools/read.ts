import { createReadStream } from 'node:fs'
import { open, readdir, stat } from 'node:fs/promises'
import { createInterface } from 'node:readline'
import { asFields, InputError, requireString, type Fields } from '../../input.js'
import { capOutput } from '../../output-cap.js'
import { errorResult, textResult, type ToolResult } from '../../types.js'
import { isBinary } from '../binary.js'
import { throwIfAborted, type ToolContext } from '../context.js'
import { resolvePath } from '../paths.js'

export async function readTool(input: unknown, ctx: ToolContext): Promise<ToolResult> {
  const o = asFields(input)
  const filePath = requireString(o, 'file_path', { nonEmpty: true })
  const [start, end] = viewRange(o)
  const abs = resolvePath(ctx.workdir, filePath)
  const st = await stat(abs)
  if (st.isDirectory()) return listDirectory(abs, ctx)
  if (!st.isFile()) return errorResult(`Not a regular file: ${filePath}`)
  if (await startsBinary(abs)) return errorResult(`${filePath} is a binary file (${st.size} bytes); it cannot be shown as text.`)

  // Streamed line by line so a huge log only costs what is shown, not the whole file.
  const stream = createReadStream(abs, { encoding: 'utf8' })
  const lines = createInterface({ input: stream, crlfDelay: Infinity })
  const out: string[] = []
  let chars = 0
  let lineNo = 0
  let cutAt: number | null = null
  try {
    for await (const line of lines) {
      lineNo++
      if (lineNo % 1_000 === 0) throwIfAborted(ctx.signal)
      if (lineNo < start) continue
      if (end !== -1 && lineNo > end) break
      const numbered = `${String(lineNo).padStart(6)}\t${line}`
      if (chars + numbered.length > ctx.maxOutputChars) {
        cutAt = lineNo
        // One line longer than the whole budget: show its head rather than nothing.
        if (out.length === 0) out.push(numbered.slice(0, ctx.maxOutputChars))
        break
      }
      out.push(numbered)
      chars += numbered.length + 1
    }
  } finally {
    // Closing readline leaves its input open; destroy it so breaking early releases the fd.
    lines.close()
    stream.destroy()
  }

  if (out.length === 0 && cutAt === null) {
    if (lineNo === 0) return textResult(`${filePath} is empty.`)
    if (start > lineNo) return errorResult(`view_range starts at line ${start} but ${filePath} has only ${lineNo} lines.`)
  }
  const text = out.join('\n')
  if (cutAt === null) return textResult(text)
  const partial = cutAt === start
  const shown = partial ? `line ${cutAt} is longer than the limit and was cut` : `lines ${start}-${cutAt - 1}`
  const next = partial ? cutAt + 1 : cutAt
  return textResult(`${text}\n[output truncated: showed ${text.length} characters (${shown}); use view_range starting at line ${next} to read more]`)
}

function viewRange(o: Fields): [number, number] {
  const v = o.view_range
  if (v === undefined || v === null) return [1, -1]
  if (!Array.isArray(v) || v.length !== 2 || !v.every((n) => Number.isInteger(n))) {
    throw new InputError('"view_range" must be an array of two integers [start, end]')
  }
  const [start, end] = v as [number, number]
  if (start < 1) throw new InputError('"view_range" start must be >= 1')
  if (end !== -1 && end < start) throw new InputError('"view_range" end must be >= start, or -1 for the end of the file')
  return [start, end]
}

async function startsBinary(abs: string): Promise<boolean> {
  const fh = await open(abs, 'r')
  try {
    const buf = Buffer.alloc(8_000)
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0)
    return isBinary(buf.subarray(0, bytesRead))
  } finally {
    await fh.close()
  }
}

async function listDirectory(abs: string, ctx: ToolContext): Promise<ToolResult> {
  const entries = await readdir(abs, { withFileTypes: true })
  const names = entries.map((e) => (e.isDirectory() ? `${e.name}/` : e.name)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
  if (names.length === 0) return textResult(`${abs} is an empty directory.`)
  return textResult(capOutput(names.join('\n'), ctx.maxOutputChars))
}
