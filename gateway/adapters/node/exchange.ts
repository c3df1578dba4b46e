import type { IncomingMessage, ServerResponse } from 'node:http'
import type { After, BodyResult, BodyStream, Exchange, Headers, ResponseStream, Unread } from '../../transport.js'
import { dropBody, readBody, streamBody } from './body.js'
import { send, sendHead, stream } from './response.js'
import { gone, LifeExchange } from '../life.js'

export class NodeExchange extends LifeExchange implements Exchange {
  readonly method: string
  readonly path: string
  readonly query: string
  readonly headers: Headers = {}

  constructor(
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
  ) {
    super()
    // 'close' also follows a completed response: only one that did not finish means the client left.
    res.once('close', () => {
      if (!res.writableFinished) gone(this.life)
    })
    this.method = (req.method ?? 'GET').toUpperCase()
    const url = req.url ?? '/'
    const q = url.indexOf('?')
    this.path = q < 0 ? url : url.slice(0, q)
    this.query = q < 0 ? '' : url.slice(q + 1)
    for (const [k, v] of Object.entries(req.headers)) {
      if (v !== undefined) this.headers[k] = Array.isArray(v) ? v.join(', ') : v
    }
  }

  readBody(limit: number, declared: number | undefined): Promise<BodyResult> {
    return readBody(this.req, this.life, limit, declared)
  }

  dropBody(): Unread {
    return dropBody(this.req)
  }

  streamBody(): BodyStream {
    return streamBody(this.req)
  }

  send(status: number, headers: Headers, body: Uint8Array, after: After = 'keep'): void {
    send(this.res, this.life, status, headers, body, after)
  }

  sendHead(status: number, headers: Headers, length: number | undefined): void {
    sendHead(this.res, this.life, status, headers, length)
  }

  stream(status: number, headers: Headers, _filler: string): ResponseStream {
    // node drains its own buffer: no filler needed.
    return stream(this.res, this.life, status, headers)
  }

  sized(status: number, headers: Headers, length: number): ResponseStream {
    return stream(this.res, this.life, status, headers, length)
  }

  protected closeConnection(): void {
    this.res.destroy()
  }
}
