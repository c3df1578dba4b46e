import type { HttpRequest, HttpResponse } from 'uWebSockets.js'
import type { After, BodyResult, BodyStream, Exchange, Headers, ResponseStream, Unread } from '../../transport.js'
import { dropBody, readBody, streamBody } from './body.js'
import { send, sendHead, sized, stream } from './response.js'
import { gone, LifeExchange } from '../life.js'

export class UwsExchange extends LifeExchange implements Exchange {
  readonly method: string
  readonly path: string
  readonly query: string
  readonly headers: Headers = {}

  /** Call it synchronously in the uWS handler: it registers onAborted and copies what `req` holds before uWS drops it. */
  constructor(
    private readonly res: HttpResponse,
    req: HttpRequest,
  ) {
    super()
    res.onAborted(() => gone(this.life))
    // Repeated headers are joined as node joins them, so a duplicated content-length (which uWS accepts, framing
    // the body by the first) reads as malformed rather than as the last value.
    req.forEach((k, v) => {
      const seen = this.headers[k]
      this.headers[k] = seen === undefined ? v : `${seen}, ${v}`
    })
    this.method = req.getCaseSensitiveMethod().toUpperCase()
    this.path = req.getUrl()
    this.query = req.getQuery() ?? ''
  }

  readBody(limit: number, declared: number | undefined): Promise<BodyResult> {
    return readBody(this.res, this.life, limit, declared)
  }

  dropBody(): Unread {
    return dropBody(this.res)
  }

  streamBody(): BodyStream {
    return streamBody(this.res, this.life)
  }

  send(status: number, headers: Headers, body: Uint8Array, after: After = 'keep'): void {
    send(this.res, this.life, status, headers, body, after)
  }

  sendHead(status: number, headers: Headers, length: number | undefined): void {
    sendHead(this.res, this.life, status, headers, length)
  }

  stream(status: number, headers: Headers, filler: string): ResponseStream {
    return stream(this.res, this.life, status, headers, filler)
  }

  sized(status: number, headers: Headers, length: number): ResponseStream {
    return sized(this.res, this.life, status, headers, length)
  }

  protected closeConnection(): void {
    // uWS runs onAborted from close(): the callbacks learn of it the usual way.
    try {
      this.res.close()
    } catch {}
  }
}
