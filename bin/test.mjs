#!/usr/bin/env node
// `npm test`: runs the test files and prints a summary instead of their raw TAP: one line per test file, every
// failure in full (the failing assertion and its diagnostics), and a closing `# { total, pass, fail }` line as tap's,
// which .ci/run reads. Without arguments, every test/**/*.test.ts; with file arguments (`npm test --
// test/agents/crud.test.ts`), those: both through bin/test-suite.mjs, the longest first. Any option
// (`npm test -- --grep=...`) hands the whole command to tap's own runner. TAP_RAW=1 prints the raw TAP too.
import { spawn, spawnSync } from 'node:child_process'
import { createInterface } from 'node:readline'
import { readFileSync, readdirSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { compiled } from './test-loader-hooks.mjs'
import { runSuite } from './test-suite.mjs'

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
const args = process.argv.slice(2)
const raw = !!process.env.TAP_RAW
const out = (s) => process.stdout.write(`${s}\n`)

/** The failing assertions of a file, each with the YAML diagnostics that follow it. */
function failures(lines) {
  const shown = []
  for (let i = 0; i < lines.length; i++) {
    const m = /^(\s*)not ok \d* ?-? ?(.*)$/.exec(lines[i])
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

if (args.some((a) => a.startsWith('-'))) runTap()
else await runFiles()

async function runFiles() {
  const root = fileURLToPath(new URL('..', import.meta.url))
  const tap = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).tap
  const files = args.length
    ? args
    : readdirSync(path.join(root, 'test'), { recursive: true })
        .filter((f) => f.endsWith('.test.ts'))
        .map((f) => path.posix.join('test', f.split(path.sep).join('/')))
  const started = performance.now()
  const totals = await runSuite({
    root,
    files,
    jobs: tap.jobs,
    timeoutS: Number(process.env.TAP_TIMEOUT) || tap.timeout,
    nodeArgs: ['--enable-source-maps', ...tap['node-arg']],
    report: {
      file(name, r) {
        if (raw) for (const l of r.lines) out(l)
        const secs = ` ${r.seconds.toFixed(1)} s`
        if (!r.ok) {
          out(`FAIL ${name}${secs}`)
          const shown = failures(r.lines)
          // Nothing tap counted (a crash, a kill): what the process printed last says why.
          for (const l of shown.length ? shown : r.lines.slice(-40)) out(shown.length ? l : `  ${l}`)
        } else if (r.skipped) out(`skip ${name}`)
        else out(`ok   ${name}${secs}`)
      },
    },
  })
  out(`# { total: ${totals.total}, pass: ${totals.pass}${totals.fail ? `, fail: ${totals.fail}` : ''} }`)
  out(`# time=${(performance.now() - started).toFixed(3)}ms`)
  out(`${totals.files} test files, ${totals.failedFiles} failed`)
  process.exit(totals.failedFiles ? 1 : 0)
}

function runTap() {
  const child = spawn(process.execPath, [tapBin, '--reporter=tap', ...args], { stdio: ['inherit', 'pipe', 'inherit'] })
  let files = 0
  let failedFiles = 0
  /** Lines of the current top-level file, kept until we know whether it failed. */
  let block = []
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
}

async function warmTestLoader() {
  const root = fileURLToPath(new URL('..', import.meta.url))
  const files = ['protocol', 'metrics', 'gateway', 'actors', 'sandbox', 'supervisor', 'test'].flatMap((dir) =>
    readdirSync(path.join(root, dir), { recursive: true })
      .filter((f) => f.endsWith('.ts'))
      .map((f) => path.join(root, dir, f)),
  )
  await Promise.all(files.map((f) => compiled(f)))
}
