// Part of `npm run deps`: no source file in actors/ passes 400 lines (docs/ARCHITECTURE.md, "Adding an actor kind"), so
// that a file stays one concept a reader can hold. Prints each file over it and exits 1.
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'

const MAX_LINES = 400
const root = path.join(path.dirname(new URL(import.meta.url).pathname), '..', 'actors')
const over = []
for (const entry of readdirSync(root, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || !entry.name.endsWith('.ts')) continue
  const file = path.join(entry.parentPath ?? entry.path, entry.name)
  const lines = readFileSync(file, 'utf8').split('\n').length - 1
  if (lines > MAX_LINES) over.push(`${path.relative(path.dirname(root), file)}: ${lines} lines`)
}
if (over.length) {
  console.error(`files in actors/ over ${MAX_LINES} lines (split them by concern):\n  ${over.join('\n  ')}`)
  process.exit(1)
}
console.log(`✔ no file in actors/ over ${MAX_LINES} lines`)
