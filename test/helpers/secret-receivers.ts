import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync } from 'node:fs'
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'

/** What a receiver of the tests was sent. */
export interface Seen {
  host: string
  path: string
  auth: string
  other: string
  body: string
}

/**
 * Two receivers on 127.0.0.1 recording what they are sent and never echoing it (the sandbox must not read a secret
 * back from them): plain HTTP, and HTTPS with a certificate of its own for localhost (`cert`, the file the proxy is
 * told to trust through TROUPE_SANDBOX_EGRESS_CA_FILE).
 */
export async function receivers(): Promise<{ seen: Seen[]; plainPort: number; tlsPort: number; cert: string }> {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'troupe-secret-receivers-'))
  const key = path.join(tmp, 'key.pem')
  const cert = path.join(tmp, 'cert.pem')
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '2',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost',
    ],
    { stdio: 'ignore' },
  )
  const seen: Seen[] = []
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    let body = ''
    req.on('data', (c) => (body += c))
    req.on('end', () => {
      seen.push({
        host: String(req.headers.host),
        path: String(req.url),
        auth: String(req.headers.authorization ?? ''),
        other: String(req.headers['x-other'] ?? ''),
        body,
      })
      res.end(`received ${body.length} bytes\n`)
    })
  }
  const listen = async (server: ReturnType<typeof createHttpServer>) => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    t.teardown(() => server.close())
    return (server.address() as { port: number }).port
  }
  const plainPort = await listen(createHttpServer(handle))
  const tlsPort = await listen(createHttpsServer({ key: readFileSync(key), cert: readFileSync(cert) }, handle) as never)
  return { seen, plainPort, tlsPort, cert }
}
