import { notFound } from '../protocol/errors.js'
import { PATH_ID_PREFIX, type Route } from '../protocol/routes/index.js'

interface Compiled {
  route: Route
  segments: Array<{ literal: string } | { param: string }>
}

export interface Match {
  route: Route
  params: Record<string, string>
}

const SAFE_ID = /^[A-Za-z0-9_-]{1,128}$/

const paramCount = (c: Compiled) => c.segments.filter((s) => 'param' in s).length

const KIND_NAMES: Record<string, string> = { agent_id: 'Agent', environment_id: 'Environment', session_id: 'Session' }

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
    const parts = path.split('/').slice(1)
    if (parts.length && parts[parts.length - 1] === '') parts.pop()
    const candidates = this.byMethod.get(method)
    if (!candidates) return undefined
    outer: for (const c of candidates) {
      if (c.segments.length !== parts.length) continue
      const params: Record<string, string> = {}
      for (let i = 0; i < parts.length; i++) {
        const seg = c.segments[i]!
        if ('literal' in seg) {
          if (seg.literal !== parts[i]) continue outer
        } else params[seg.param] = decodeURIComponent(parts[i]!)
      }
      for (const [name, value] of Object.entries(params)) {
        const prefix = PATH_ID_PREFIX[name]
        // Ids become NATS subject tokens and KV keys: anything not shaped like ours cannot exist.
        if (prefix && (!value.startsWith(prefix) || !SAFE_ID.test(value))) throw notFound(KIND_NAMES[name] ?? name, value)
      }
      return { route: c.route, params }
    }
    return undefined
  }

  /** True when the path exists under another method (for a clearer 404 message). */
  pathExists(path: string): boolean {
    for (const m of this.byMethod.keys()) {
      try {
        if (this.match(m, path)) return true
      } catch {
        return true
      }
    }
    return false
  }
}
