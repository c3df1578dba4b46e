/*
 * A small glob compiler. Node 20 has no stable fs.glob, path.matchesGlob prints an
 * ExperimentalWarning, and the `glob` package is only a transitive dev dependency here, so
 * the few forms agents actually use are compiled to a RegExp directly.
 * Supported: ** (any depth, as a whole segment), *, ?, [abc] / [!abc] / [a-z], {a,b} (nestable),
 * and \ to escape. Wildcards match dot-files too: agents looking for ".env" files expect that.
 */

const MAGIC = /[*?[{\\]/

export function hasMagic(segment: string): boolean {
  return MAGIC.test(segment)
}

export function globToRegExp(pattern: string): RegExp {
  return new RegExp(`^${compile(pattern)}$`)
}

/**
 * Splits off the leading wildcard-free directories so a walk can start there instead of at
 * the search root ("src/lib/**\/*.ts" walks only src/lib).
 */
export function staticPrefix(pattern: string): { prefix: string; rest: string } {
  const segments = pattern.split('/')
  let i = 0
  while (i < segments.length - 1 && !hasMagic(segments[i] ?? '')) i++
  return { prefix: segments.slice(0, i).join('/'), rest: segments.slice(i).join('/') }
}

/** How many path segments a match can have, or Infinity when ** or a braced "/" allows any. */
export function maxSegments(pattern: string): number {
  if (pattern.includes('**') || /\{[^}]*\//.test(pattern)) return Infinity
  return pattern.split('/').length
}

function compile(p: string): string {
  let re = ''
  let i = 0
  while (i < p.length) {
    const c = p.charAt(i)
    if (c === '\\' && i + 1 < p.length) {
      re += escapeRe(p.charAt(i + 1))
      i += 2
    } else if (c === '*') {
      let j = i
      while (p.charAt(j) === '*') j++
      const wholeSegment = j - i >= 2 && (i === 0 || p.charAt(i - 1) === '/') && (j === p.length || p.charAt(j) === '/')
      if (!wholeSegment) {
        re += '[^/]*'
      } else if (j === p.length) {
        re += '.*'
      } else {
        // "**/" may also match nothing, so "src/**/a.ts" matches "src/a.ts".
        re += '(?:[^/]+/)*'
        j += 1
      }
      i = j
    } else if (c === '?') {
      re += '[^/]'
      i += 1
    } else if (c === '[') {
      const close = findClassEnd(p, i)
      if (close < 0) {
        re += '\\['
        i += 1
      } else {
        let body = p.slice(i + 1, close)
        const negate = body.startsWith('!') || body.startsWith('^')
        if (negate) body = body.slice(1)
        re += `[${negate ? '^' : ''}${body.replace(/\\/g, '\\\\').replace(/\]/g, '\\]')}]`
        i = close + 1
      }
    } else if (c === '{') {
      const close = findBraceEnd(p, i)
      const alts = close < 0 ? [] : splitTopLevel(p.slice(i + 1, close))
      if (alts.length < 2) {
        re += '\\{'
        i += 1
      } else {
        re += `(?:${alts.map(compile).join('|')})`
        i = close + 1
      }
    } else {
      re += escapeRe(c)
      i += 1
    }
  }
  return re
}

function findClassEnd(p: string, open: number): number {
  let i = open + 1
  if (p.charAt(i) === '!' || p.charAt(i) === '^') i++
  // A ']' right after the opening is a literal member, as in shells.
  if (p.charAt(i) === ']') i++
  for (; i < p.length; i++) {
    if (p.charAt(i) === ']') return i
    if (p.charAt(i) === '/') return -1
  }
  return -1
}

function findBraceEnd(p: string, open: number): number {
  let depth = 0
  for (let i = open; i < p.length; i++) {
    const c = p.charAt(i)
    if (c === '\\') i++
    else if (c === '{') depth++
    else if (c === '}' && --depth === 0) return i
  }
  return -1
}

function splitTopLevel(body: string): string[] {
  const parts: string[] = []
  let depth = 0
  let start = 0
  for (let i = 0; i < body.length; i++) {
    const c = body.charAt(i)
    if (c === '\\') i++
    else if (c === '{') depth++
    else if (c === '}') depth--
    else if (c === ',' && depth === 0) {
      parts.push(body.slice(start, i))
      start = i + 1
    }
  }
  parts.push(body.slice(start))
  return parts
}

function escapeRe(c: string): string {
  return c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')
}
