import t from 'tap'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { catalog, isErrorCode } from '../../protocol/errors/catalog.js'
import { stack } from '../helpers/stack.js'
import { raw } from '../helpers/troupe.js'

// The README's "What works today" table holds to what a running server serves: a family marked served has routes
// in /openapi.yaml, one marked "not yet" has none and answers as the table says, every route served belongs to a
// family of the table, and every error code the table names is one the server sends with that status.

const README = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../README.md')

interface Family {
  name: string
  /** The path the family's routes start with. */
  path: string
  served: boolean
  today: string
}

function families(): Family[] {
  const text = readFileSync(README, 'utf8')
  const section = /^## What works today\n([\s\S]*?)^## /m.exec(text)?.[1]
  if (!section) throw new Error('README.md has no "## What works today" section')
  const rows = section.split('\n').filter((l) => /^\| [^-]/.test(l))
  const [head, ...body] = rows.map((r) =>
    r
      .slice(1, -1)
      .split(' | ')
      .map((c) => c.trim()),
  )
  if (head?.join('|') !== 'family|client|path|today') throw new Error(`unexpected columns: ${head}`)
  return body.map(([name, , p, today]) => {
    const served = /^served\b/.test(today!)
    if (!served && !/^not yet\b/.test(today!)) throw new Error(`${name}: "today" must start with "served" or "not yet"`)
    return { name: name!, path: /^`(\/[^`]+)`$/.exec(p!)![1]!, served, today: today! }
  })
}

const s = await stack()
const rows = families()
const openapi = await (await fetch(`${s.url}/openapi.yaml`)).text()
const paths = [...openapi.matchAll(/^ {2}"(\/v1\/[^"]*)":$/gm)].map((m) => m[1]!)

/** The family a path belongs to: the row whose path is its longest prefix. */
const familyOf = (p: string) => rows.filter((f) => p === f.path || p.startsWith(`${f.path}/`)).sort((a, b) => b.path.length - a.path.length)[0]

t.test('the table parses and /openapi.yaml lists routes', async (t) => {
  t.ok(rows.length >= 10, `${rows.length} families`)
  t.ok(paths.length > 0, `${paths.length} paths`)
})

t.test('every route served belongs to a family of the table', async (t) => {
  for (const p of paths) t.ok(familyOf(p), `${p} has a row`)
})

t.test('a family marked served has routes; one marked not yet has none', async (t) => {
  for (const f of rows) {
    const own = paths.filter((p) => familyOf(p) === f)
    if (f.served) t.ok(own.length > 0, `${f.name}: served, with ${own.length} routes`)
    else t.same(own, [], `${f.name}: not yet, no routes`)
  }
})

t.test('a family marked not yet answers what the table says', async (t) => {
  for (const f of rows.filter((r) => !r.served)) {
    t.match(f.today, /^not yet: 404 `not_found_error`/, `${f.name} names the answer`)
    // Path ids are well-formed, so the answer is about the route, not the id.
    const url = f.path.replace(/\{(\w+)_id\}/g, (_, kind: string) => `${{ session: 'sesn', environment: 'env' }[kind] ?? kind}_01NOTBUILT`)
    for (const method of ['GET', 'POST']) {
      const r = await raw(s.url, method, url, method === 'POST' ? {} : undefined)
      t.equal(r.status, 404, `${method} ${url}`)
      t.equal(r.json?.error?.type, 'not_found_error')
      t.equal(r.json?.error?.message, `No route for ${method} ${url}`)
    }
  }
})

t.test('every error code the table names is sent, with the status it gives', async (t) => {
  for (const f of rows) {
    for (const m of f.today.matchAll(/(\d{3}) `(\w+)`(?: \([^)]*\))?(?: or `(\w+)`)?/g)) {
      const [, status, ...codes] = m
      for (const code of codes.filter((c): c is string => c !== undefined && c !== 'not_found_error')) {
        t.ok(isErrorCode(code), `${f.name}: ${code} is in the catalog`)
        if (isErrorCode(code)) t.equal(catalog[code].status, Number(status), `${code} is a ${status}`)
      }
    }
  }
})

t.test('the unserved path the README gives as an example answers as it says', async (t) => {
  const text = readFileSync(README, 'utf8')
  const example = /not served answers 404 `not_found_error` \(`No route for GET (\/v1\/[^`\s]+)`/.exec(text)?.[1]
  if (!example) return t.fail('the README names an unserved path')
  t.notOk(familyOf(example), `${example} belongs to no family of the table`)
  t.notOk(
    paths.some((p) => p === example || p.startsWith(`${example}/`)),
    'and has no route',
  )
  for (const method of ['GET', 'POST', 'DELETE']) {
    const r = await raw(s.url, method, example, method === 'POST' ? {} : undefined)
    t.equal(r.status, 404, `${method} ${example}`)
    t.same(r.json?.error, { type: 'not_found_error', message: `No route for ${method} ${example}` })
  }
})
