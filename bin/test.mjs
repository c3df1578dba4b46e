#!/usr/bin/env node
// `npm test`: runs tap with its raw TAP output and prints a summary instead: one line per test file, every
// failure in full (the failing assertion and its diagnostics), and tap's closing `# { total, pass, fail }` line,
// which .ci/run reads. Arguments go to tap (`npm test -- test/agents/crud.test.ts`). TAP_RAW=1 prints it all.
import { spawn, spawnSync } from 'node:child_process'
import { createInterface } from 'node:readline'
import { readdirSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { compiled } from './test-loader-hooks.mjs'

// tap's package exports no bin path; its CLI sits where npm links `tap` from.
const tapBin = fileURLToPath(new URL('../node_modules/tap/dist/esm/run.mjs', import.meta.url))

// tap installs with its Test class built for its default plugins, TypeScript (ts-node) among them; package.json's
// `plugin` list drops that one (tsx loads the tests). tap rebuilds the class when it finds it stale, but only after
// its runner has read the old class's loaders, so the first run after an install would still start every test file
// with ts-node's loader, which type-checks what the file imports: about 15 s of CPU per file. Rebuild first.
async function tapIsBuilt() {
  try {
    const [{ TapConfig }, { signature }] = await Promise.all([import('@tapjs/config'), import('@tapjs/test')])
    return (await TapConfig.load()).pluginSignature === signature
  } catch {
    return true // let tap itself deal with whatever is missing
  }
}
if (!(await tapIsBuilt())) {
  const build = spawnSync(process.execPath, [tapBin, 'build'], { stdio: ['ignore', 2, 2] })
  if (build.status !== 0) process.exit(build.status ?? 1)
}
// Every TypeScript module compiled into the test loader's cache first (bin/test-loader.mjs): once, in one process, rather than
// in each of the first test processes at once.
await warmTestLoader()
const child = spawn(process.execPath, [tapBin, '--reporter=tap', ...process.argv.slice(2)], { stdio: ['inherit', 'pipe', 'inherit'] })

const raw = !!process.env.TAP_RAW
let files = 0
let failedFiles = 0
/** Lines of the current top-level file, kept until we know whether it failed. */
let block = []
const out = (s) => process.stdout.write(`${s}\n`)

/** The failing assertions of a file, each with the YAML diagnostics that follow it. */
function failures(lines) {
  const shown = []
  for (let i = 0; i < lines.length; i++) {
    const m = /^(\s*)not ok \d+ - (.*)$/.exec(lines[i])
    if (!m) continue
    // A subtest's own "not ok" repeats its children's failures: show only leaves (followed by diagnostics).
    const indent = m[1].length
    const diag = []
    let j = i + 1
    if (lines[j]?.trim() === '---') {
      for (; j < lines.length; j++) {
        diag.push(lines[j])
        if (lines[j].trim() === '...') break
      }
    }
    const isSubtest = lines.slice(Math.max(0, i - 1), i).some((l) => l.length > indent && /^\s+1\.\.\d+/.test(l))
    if (isSubtest && diag.every((l) => !/diff:|found:|wanted:|message:|stack:/.test(l))) continue
    shown.push(`  not ok - ${m[2]}`, ...diag.map((l) => `    ${l.slice(indent)}`))
  }
  return shown
}

const rl = createInterface({ input: child.stdout })
rl.on('line', (line) => {
  if (raw) return out(line)
  const top = /^(not )?ok \d+ - (\S+)(.*)$/.exec(line)
  if (top) {
    files++
    const time = /# time=([\d.]+)ms/.exec(top[3])?.[1]
    const secs = time ? ` ${(Number(time) / 1000).toFixed(1)} s` : ''
    if (top[1]) {
      failedFiles++
      out(`FAIL ${top[2]}${secs}`)
      for (const l of failures(block)) out(l)
    } else if (/# SKIP/.test(top[3])) out(`skip ${top[2]}`)
    else out(`ok   ${top[2]}${secs}`)
    block = []
    return
  }
  if (/^# \{ total:/.test(line) || /^# time=/.test(line)) return out(line)
  if (/^Bail out!/.test(line)) return out(line)
  block.push(line)
})
child.on('exit', (code, signal) => {
  if (!raw) out(`${files} test files, ${failedFiles} failed`)
  process.exit(code ?? (signal ? 1 : 0))
})

async function warmTestLoader() {
  const root = fileURLToPath(new URL('..', import.meta.url))
  const files = ['protocol', 'gateway', 'actors', 'sandbox', 'supervisor', 'test'].flatMap((dir) =>
    readdirSync(path.join(root, dir), { recursive: true })
      .filter((f) => f.endsWith('.ts'))
      .map((f) => path.join(root, dir, f)),
  )
  await Promise.all(files.map((f) => compiled(f)))
}
