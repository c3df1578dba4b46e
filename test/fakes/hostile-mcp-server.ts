/**
 * A hostile MCP server for the fuzz run (issue 43 point 7): plain HTTP speaking just enough streamable-HTTP JSON-RPC to
 * be connected to, then misbehaving in the way its path names (`/<mode>/mcp`). Written by hand, not with the SDK, since
 * the SDK's server cannot lie. Each mode lists one tool, `probe`, unless its lie is in the list.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'

export const HOSTILE_MODES = [
  /** 3,000 small tools over three pages. */
  'many-tools',
  /** One 20 MB page of tools. */
  'huge-list',
  /** A page of one tool and a new cursor, forever. */
  'endless-pages',
  /** A list the protocol's own schema refuses (a tool whose inputSchema is a string, another's of type string). */
  'bad-shapes',
  /** A list the schema takes but the Messages API would not: deep and huge schemas, long and odd names, duplicates. */
  'odd-tools',
  /** Never answers `initialize`. */
  'slow-init',
  /** Never answers `tools/call`. */
  'slow-call',
  /** Answers `tools/call` under another request's id. */
  'wrong-id',
  /** Answers `tools/call` with bytes that are not JSON. */
  'garbage',
  /** Answers `tools/call` with a result whose content is a string. */
  'shape-lie',
  /** Answers `tools/call` with 20 MB of text. */
  'oversize-result',
  /** Answers `tools/call` with an event stream of comments that never ends. */
  'flood-sse',
  /** Answers everything 500 with a 1 MB HTML page. */
  'html-500',
  /** Redirects everything to the cloud metadata address. */
  'redirect',
] as const
export type HostileMode = (typeof HOSTILE_MODES)[number]

export interface HostileMcpServer {
  url(mode: HostileMode): string
  /** Requests seen, by mode. */
  seen: Map<string, number>
  close(): Promise<void>
}

const PROBE = { name: 'probe', description: 'Probes.', inputSchema: { type: 'object', properties: {} } }

export async function startHostileMcpServer(): Promise<HostileMcpServer> {
  const seen = new Map<string, number>()
  const sockets = new Set<Socket>()
  const hanging = new Set<ServerResponse>()
  const http = createServer((req, res) => void serve(req, res).catch(() => res.destroy()))
  http.on('connection', (s) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
  })

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const mode = (req.url ?? '/').split('/')[1] as HostileMode
    seen.set(mode, (seen.get(mode) ?? 0) + 1)
    const chunks: Buffer[] = []
    for await (const c of req) chunks.push(c as Buffer)
    if (mode === 'html-500') return void res.writeHead(500, { 'content-type': 'text/html' }).end(`<html><body>${'oops '.repeat(200_000)}</body></html>`)
    if (mode === 'redirect') return void res.writeHead(307, { location: 'http://169.254.169.254/latest/meta-data/' }).end()
    if (req.method !== 'POST') return void res.writeHead(405).end()
    let msg: { id?: number | string; method?: string; params?: { cursor?: string } }
    try {
      msg = JSON.parse(Buffer.concat(chunks).toString())
    } catch {
      return void res.writeHead(400).end()
    }
    if (msg.id === undefined) return void res.writeHead(202).end()
    const answer = (result: unknown, id = msg.id) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id, result }))
    const hang = () => {
      hanging.add(res)
      res.on('close', () => hanging.delete(res))
    }
    switch (msg.method) {
      case 'initialize':
        if (mode === 'slow-init') {
          hang()
          return
        }
        return void answer({ protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: `hostile-${mode}`, version: '0' } })
      case 'tools/list':
        return void answer(list(mode, msg.params?.cursor))
      case 'tools/call':
        return call(mode, msg.id!, res, answer, hang)
      default:
        return void answer({})
    }
  }

  function list(mode: HostileMode, cursor: string | undefined): unknown {
    const page = Number(cursor ?? 0)
    switch (mode) {
      case 'many-tools':
        return {
          tools: Array.from({ length: 1000 }, (_, i) => (page === 0 && i === 0 ? PROBE : { ...PROBE, name: `tool_${page}_${i}` })),
          ...(page < 2 ? { nextCursor: String(page + 1) } : {}),
        }
      case 'huge-list':
        return { tools: Array.from({ length: 20_000 }, (_, i) => ({ ...PROBE, name: `tool_${i}`, description: 'd'.repeat(1000) })) }
      case 'endless-pages':
        return { tools: [page === 0 ? PROBE : { ...PROBE, name: `tool_${page}` }], nextCursor: String(page + 1) }
      case 'bad-shapes':
        return { tools: [PROBE, { name: 'broken', inputSchema: 'not a schema' }, { ...PROBE, name: 'not-object', inputSchema: { type: 'string' } }] }
      case 'odd-tools': {
        let deep: Record<string, unknown> = { type: 'string' }
        for (let i = 0; i < 200; i++) deep = { type: 'object', properties: { a: deep } }
        return {
          tools: [
            PROBE,
            { ...PROBE, name: 'deep', inputSchema: deep },
            { ...PROBE, name: 'huge', inputSchema: { type: 'object', description: 'x'.repeat(200_000) } },
            { ...PROBE, name: 'n'.repeat(300) },
            { ...PROBE, name: 'spaced name ☃' },
            { ...PROBE, name: 'dup' },
            { ...PROBE, name: 'dup' },
            { ...PROBE, name: '' },
          ],
        }
      }
      default:
        return { tools: [PROBE] }
    }
  }

  function call(mode: HostileMode, id: number | string, res: ServerResponse, answer: (r: unknown, id?: number | string) => void, hang: () => void): void {
    switch (mode) {
      case 'slow-call':
        hang()
        return
      case 'wrong-id':
        return void answer({ content: [{ type: 'text', text: 'for someone else' }] }, typeof id === 'number' ? id + 1000 : `${id}x`)
      case 'garbage':
        return void res.writeHead(200, { 'content-type': 'application/json' }).end('}{ this is not json')
      case 'shape-lie':
        return void answer({ content: 'a string where blocks belong' })
      case 'oversize-result':
        return void answer({ content: [{ type: 'text', text: 'z'.repeat(20 * 1024 * 1024) }] })
      case 'flood-sse': {
        res.writeHead(200, { 'content-type': 'text/event-stream' })
        hang()
        const ping = `: ${'p'.repeat(64 * 1024)}\n\n`
        const pump = () => {
          while (!res.destroyed && res.write(ping)) {}
          if (!res.destroyed) res.once('drain', pump)
        }
        pump()
        return
      }
      default:
        return void answer({ content: [{ type: 'text', text: 'probed' }] })
    }
  }

  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
  const port = (http.address() as AddressInfo).port
  return {
    url: (mode) => `http://127.0.0.1:${port}/${mode}/mcp`,
    seen,
    async close() {
      for (const r of hanging) r.destroy()
      for (const s of sockets) s.destroy()
      await new Promise<void>((resolve) => http.close(() => resolve()))
    },
  }
}
