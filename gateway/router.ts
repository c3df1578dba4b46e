import { fail } from '../protocol/errors/fail.js'
import { isId } from '../protocol/ids.js'
import { PATH_ID_PREFIX, type Route } from '../protocol/routes/index.js'

interface Compiled {
  route: Route
  segments: Array<{ literal: string } | { param: string }>
}

export interface Match {
  route: Route
  params: Record<string, string>
}

const paramCount = (c: Compiled) => c.segments.filter((s) => 'param' in s).length

/** Segment-by-segment matching over a small, fixed table: no regexes on the hot path. */
export class Router {
  private readonly byMethod = new Map<string, Compiled[]>()

  constructor(routes: readonly Route[]) {
    for (const route of routes) {
      const segments = route.path
        .split('/')
        .slice(1)
        .map((s) => (s.startsWith('{') ? { param: s.slice(1, -1) } : { literal: s }))
      const list = this.byMethod.get(route.method) ?? []
      list.push({ route, segments })
      // Literal segments win over parameters of the same length (…/events/stream before …/events/{id}).
      list.sort((a, b) => paramCount(a) - paramCount(b))
      this.byMethod.set(route.method, list)
    }
  }

  /** The matching route, or undefined. An id with the wrong prefix is a 404 for that resource. */
  match(method: string, path: string): Match | undefined {
    const parts = split(path)
    const candidates = this.byMethod.get(method)
    if (!candidates) return undefined
    for (const c of candidates) {
      if (!fits(c, parts)) continue
      const params: Record<string, string> = {}
      c.segments.forEach((seg, i) => {
        if ('param' in seg) params[seg.param] = decodeSegment(parts[i]!)
      })
      for (const [name, value] of Object.entries(params)) {
        const id = PATH_ID_PREFIX[name]
        // Ids become NATS subject tokens and KV keys: anything not shaped like ours cannot exist.
        if (id && !(id.check ? id.check(value) : isId(id.prefix, value))) throw fail('not_found', id.noun, value.length > 64 ? `${value.slice(0, 64)}…` : value)
      }
      return { route: c.route, params }
    }
    return undefined
  }

  /** The methods the path is served under, in table order (for 405's `Allow`); empty when none. */
  methodsFor(path: string): string[] {
    const parts = split(path)
    const methods: string[] = []
    for (const [method, candidates] of this.byMethod) {
      if (candidates.some((c) => fits(c, parts))) methods.push(method)
    }
    return methods
  }
}

const fits = (c: Compiled, parts: string[]) =>
  c.segments.length === parts.length && c.segments.every((seg, i) => !('literal' in seg) || seg.literal === parts[i])

/** A malformed escape (`%E0%A4%A`) stays as sent: it cannot be one of our ids, so it is a 404, not a URIError. */
function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}

function split(path: string): string[] {
  const parts = path.split('/').slice(1)
  if (parts.length && parts[parts.length - 1] === '') parts.pop()
  return parts
}
