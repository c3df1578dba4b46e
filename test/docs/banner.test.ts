import t from 'tap'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import '../helpers/keepalive.js'
import { scratch } from '../helpers/scratch.js'
import { until } from '../helpers/wait.js'

// The README's sample of what `npm start` prints is the real start-up block: the same lines, in the same order, and
// where a line does not depend on the machine (no ports, ids, paths or sandbox probe), the same words.

const README = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../README.md')
/** Lines whose words are the same on every machine, given the environment below (no model, no keyring). */
const FIXED = ['replicas', 'webhooks', 'model', 'keyring', 'strict']

/** A start-up block's lines: name → the rest. */
const linesOf = (block: string) => [...block.matchAll(/^ {2}(\S+) +(.*)$/gm)].map((m) => [m[1]!, m[2]!] as const)

const files = scratch('troupe-banner-')

t.test("the README's start-up block is a real troupe start's", async (t) => {
  const text = readFileSync(README, 'utf8')
  const sample = /^```\n(troupe start listening on [^\n]*\n(?: {2}[^\n]*\n)+)```$/m.exec(text)?.[1]
  if (!sample) return t.fail('the README shows a start-up block')
  const p = await files.start({
    role: 'start',
    env: { NATS_URL: '', TROUPE_STRICT: '', TROUPE_DATA_DIR: files.dataDir(), TROUPE_MODEL_BASE_URL: '', ANTHROPIC_API_KEY: '', TROUPE_VAULT_KEYRING_FILE: '' },
  })
  await until('the start-up block', () => /^ {2}version /m.test(p.stdout()), 10_000)
  const real = p.stdout()
  t.match(real, /^troupe start listening on http:\/\/127\.0\.0\.1:\d+$/m, 'the first line')
  t.match(sample, /^troupe start listening on http:\/\/127\.0\.0\.1:\d+$/m)
  const [mine, theirs] = [linesOf(sample), linesOf(real)]
  t.same(
    mine.map(([name]) => name),
    theirs.map(([name]) => name),
    'the same lines in the same order',
  )
  for (const name of FIXED) {
    t.equal(mine.find(([n]) => n === name)?.[1], theirs.find(([n]) => n === name)?.[1], `${name}: the same words`)
  }
  await p.stop()
})
