/**
 * Flattens a query string the way the official client writes it (qs, `arrayFormat: brackets`):
 * `statuses[]=a&statuses[]=b` and `statuses=a&statuses=b` both become `statuses: ["a","b"]`; bracketed
 * keys such as `created_at[gte]` stay literal keys. A single value stays a string; schemas that want an
 * array accept either.
 */
export function parseQuery(qs: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {}
  if (!qs) return out
  for (const [rawKey, value] of new URLSearchParams(qs)) {
    const isArray = rawKey.endsWith('[]')
    const key = isArray ? rawKey.slice(0, -2) : rawKey
    const prev = out[key]
    if (prev === undefined) out[key] = isArray ? [value] : value
    else out[key] = Array.isArray(prev) ? [...prev, value] : [prev, value]
  }
  return out
}
