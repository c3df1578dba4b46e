import type { Op } from '../ops/define.js'

export type Method = 'GET' | 'POST' | 'DELETE'

/** Which beta a strict-mode request must claim on this route. */
/** `files`: the official client sends no beta header on these (WIRE §10), so strict mode asks for none. */
/** `admin`: the admin routes, which no client of the vendor's sends a beta to. */
export type BetaGroup = 'managed-agents' | 'skills' | 'memory' | 'dreams' | 'files' | 'admin'

export interface Route {
  method: Method
  /** Path with `{param}` segments, exactly as documented in the OpenAPI inventory. */
  path: string
  operationId: string
  summary: string
  /**
   * The operation it calls: where it runs, its body schema (an operation without one takes no body; the official
   * client sends none) and its query schema (over the flattened query, see gateway/query.ts; unknown parameters
   * are ignored).
   */
  op: Op
  beta?: BetaGroup
  /**
   * Each call stores something new (a create, events.send): the route honours `Idempotency-Key`, and without one
   * an outcome lost to a timeout is a 504 the client must not retry blindly, rather than a retryable 503.
   */
  once?: boolean
  /** Served as a server-sent event stream rather than one JSON reply. */
  stream?: boolean
  /**
   * The body or the answer is a file's bytes, streamed (protocol/files.ts) rather than one JSON message: `upload`
   * reads a multipart body's `file` part into the store, then calls the op with what it stored; `download` calls the
   * op (the file's metadata and the object holding its bytes), then streams them; `skill` reads a multipart skill
   * bundle (a zip in `file`, or path-qualified `files[]` parts), validates it off the event loop, stores its canonical
   * zip, then calls the op with what it stored and what validation found.
   */
  bytes?: 'upload' | 'download' | 'skill'
  /**
   * Request headers the op reads (lower case), copied into the actor request (`ActorRequest.headers`), each at most
   * 256 characters (a longer one is cut): the work poll's `anthropic-worker-id`. No other header reaches an actor.
   */
  headers?: readonly string[]
  /** An admin route: only a key of scope `admin` reaches it, whether or not keys are checked elsewhere (gateway/auth.ts). */
  admin?: true
}
