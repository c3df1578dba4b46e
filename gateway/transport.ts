import type { Readable } from 'node:stream'

/**
 * What the gateway needs of an HTTP server, and nothing more: the router, the handlers, SSE and the body limit are
 * written against these types, and each transport (gateway/adapters/uws, gateway/adapters/node) implements them.
 */

/** The transports there are (`TROUPE_HTTP`). */
export type TransportName = 'uws' | 'node'

export const TRANSPORT_NAMES: readonly TransportName[] = ['uws', 'node']

/** What the start-up block calls each transport. */
export const TRANSPORT_LABEL: Record<TransportName, string> = { uws: 'uWebSockets.js', node: 'node:http' }

export type Headers = Record<string, string>

/**
 * The part of a request body nobody reads: dropped as it arrives, with its end noted, so an early answer can be
 * followed by a lingering close rather than a reset the client may see before the answer.
 */
export interface Unread {
  /** The client finished sending the body. */
  ended: boolean
  /** Bytes dropped since reading stopped. */
  dropped: number
  /** Called on every dropped chunk and at the end of the body. */
  onProgress?: () => void
}

export type BodyResult = { ok: true; bytes: Buffer } | { ok: false; reason: 'too_large'; unread: Unread } | { ok: false; reason: 'aborted' }

/**
 * What follows a response: `keep` the connection; `close` it (state unknown after a failure); or linger over an
 * `Unread` body: answer now, drop the rest of the body as it comes, and close only once the client has sent it all
 * (bounded by LINGER_MS and LINGER_BYTES). Closing while the client still sends makes the kernel reset the
 * connection, and the client may then lose the answer it had not read yet.
 */
export type After = 'keep' | 'close' | Unread

/** How long a lingering close drops the rest of an unread body before it closes anyway. */
export const LINGER_MS = 5_000
/** How much of an unread body a lingering close drops before it closes anyway. */
export const LINGER_BYTES = 64 * 1024 * 1024

/**
 * A response written in pieces (SSE). `write` always takes the chunk; `false` means the transport is holding
 * data the client has not taken yet: write no more until the `onWritable` callback runs.
 */
export interface ResponseStream {
  write(chunk: string | Uint8Array): boolean
  /** Called each time the transport can take more after a `write` returned false. One callback; a later one replaces it. */
  onWritable(cb: () => void): void
  /** Ends the response after `last` and whatever the transport still holds. */
  end(last?: string | Uint8Array): void
}

/** A request body read as it arrives (an upload), never gathered whole. */
export interface BodyStream {
  /**
   * The body's bytes in order; while the reader takes none, the transport stops reading from the client. Ends with
   * the body; destroyed with an error when the client goes away.
   */
  readonly readable: Readable
  /** Stops reading: what is still to come is dropped as it arrives (for an answer before the body ended). */
  drop(): Unread
}

/**
 * One request and its response. Facts are copied off the wire before the handler runs (uWS invalidates its request
 * object when the handler returns). At most one of `send`, `sendHead`, `stream` is called; after the client went
 * away (`onAbort`) every method is a no-op, never a throw.
 */
export interface Exchange {
  /** Upper case, as sent (`HEAD` is not rewritten: the gateway routes it as GET and answers with `sendHead`). */
  readonly method: string
  /** The path without the query, still percent-encoded. */
  readonly path: string
  /** The query string without `?`; empty when there is none. */
  readonly query: string
  /** Lower-case names; a repeated header's values joined by `, `. */
  readonly headers: Headers
  /**
   * Reads the body up to `limit` bytes; past it (declared, or counted while reading) it stops keeping chunks and
   * reports `too_large` with the rest dropped as it comes. Call it, or `dropBody`, before the handler's first await:
   * uWS loses body chunks that arrive while no reader is registered, and with them the end of the body.
   */
  readBody(limit: number, declared: number | undefined): Promise<BodyResult>
  /** Drops a body that will not be read at all; same timing rule as `readBody`. */
  dropBody(): Unread
  /** Hands the body over as it arrives (an upload), whatever its size; same timing rule as `readBody`. */
  streamBody(): BodyStream
  /** A whole response; the transport adds `content-length`. */
  send(status: number, headers: Headers, body: Uint8Array, after?: After): void
  /**
   * A response to HEAD: the status and headers, `content-length: length` when given (what the GET body would
   * weigh), no body. The connection stays usable: a HEAD body is never read, so nothing can be left half-read.
   */
  sendHead(status: number, headers: Headers, length: number | undefined): void
  /**
   * Starts a streamed response (status and headers go out with the first write). `filler` is a chunk the client
   * ignores (an SSE comment): uWS drains what it holds only through a write, so when it asks for more and nothing
   * is waiting, the filler is written.
   */
  stream(status: number, headers: Headers, filler: string): ResponseStream
  /**
   * Starts a response of exactly `length` bytes (a download; the transport sends its `content-length`), written in
   * pieces with the same backpressure as `stream`. `end` after the last byte; a response cut short is `close`d.
   */
  sized(status: number, headers: Headers, length: number): ResponseStream
  /** Runs `fn` once if the client goes away before the response is complete. One callback; a later one replaces it. */
  onAbort(fn: () => void): void
  /** Closes the connection now, whatever is in flight (a stream whose client fell too far behind). */
  close(): void
}

/** Called once per request, synchronously, as it arrives. */
export type Handler = (ex: Exchange) => void

export interface ListenOptions {
  host: string
  /** 0 picks a free port. */
  port: number
  handler: Handler
}

export interface Listening {
  /** The port bound (the one picked when 0 was asked). */
  readonly port: number
  /** Stops listening and closes every connection. Idempotent. */
  close(): void
}

/**
 * A transport's entry point: listens, refusing a port already in use with
 * `cannot listen on <host>:<port>: port in use (…)` (gateway/listen-error.ts).
 */
export type Listen = (opts: ListenOptions) => Promise<Listening>
