import type { Route } from '../protocol/routes/index.js'

export interface OpsRoute {
  method: 'GET'
  path: string
  operationId: string
  summary: string
}

/** The operational routes the gateway answers itself. */
export const OPS_ROUTES: readonly OpsRoute[] = [
  { method: 'GET', path: '/healthz', operationId: 'health', summary: 'Liveness: the process is up' },
  { method: 'GET', path: '/readyz', operationId: 'ready', summary: 'Readiness: NATS, JetStream and an actor host answer' },
  { method: 'GET', path: '/openapi.yaml', operationId: 'openapi', summary: 'This endpoint inventory' },
  { method: 'GET', path: '/metrics', operationId: 'metrics', summary: "This process's metrics in Prometheus text format (absent with TROUPE_METRICS=off)" },
]

const q = (s: string) => JSON.stringify(s)

/**
 * The endpoint inventory (no schemas), generated from the route table so it can list nothing the server
 * lacks and miss nothing it has. JSON strings are valid YAML scalars, which keeps escaping trivial.
 */
export function openapiYaml(routes: readonly (Route | OpsRoute)[], version: string): string {
  const byPath = new Map<string, Array<Route | OpsRoute>>()
  for (const r of routes) byPath.set(r.path, [...(byPath.get(r.path) ?? []), r])
  const lines = ['openapi: 3.1.0', 'info:', '  title: Troupe Managed Agents API', `  version: ${q(version)}`, 'paths:']
  for (const [path, list] of byPath) {
    lines.push(`  ${q(path)}:`)
    for (const r of list) {
      lines.push(`    ${r.method.toLowerCase()}:`, `      operationId: ${q(r.operationId)}`, `      summary: ${q(r.summary)}`)
      const params = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!)
      if (params.length) {
        lines.push('      parameters:')
        for (const p of params) lines.push(`        - name: ${q(p)}`, '          in: path', '          required: true', '          schema: {type: string}')
      }
      const answer = 'stream' in r && r.stream ? 'Server-sent event stream' : 'bytes' in r && r.bytes === 'download' ? "The file's bytes" : 'OK'
      if ('bytes' in r && r.bytes === 'upload') lines.push('      requestBody:', '        content: {multipart/form-data: {}}')
      lines.push('      responses:', `        "200":`, `          description: ${q(answer)}`)
    }
  }
  return `${lines.join('\n')}\n`
}
