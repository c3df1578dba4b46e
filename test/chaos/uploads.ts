// An upload in flight at a host SIGKILL is whole or absent, never partial: just before the signal, uploads stream into
// the host about to die (POST /v1/files, chunked, straight to its gateway: no balancer retries them elsewhere), one
// small, one quick, one slow; after it, each is looked up by the id its Idempotency-Key gives, on the hosts left.
import { createHash, randomBytes } from 'node:crypto'
import { request } from 'node:http'
import type Anthropic from '@anthropic-ai/sdk'
import { idFromKey } from '../../protocol/ids.js'

export interface UploadCheck {
  host: string
  key: string
  id: string
  size: number
  /** Bytes of the file written to the socket by the time of the signal. */
  sentAtKill: number
  /** The HTTP status the upload got, or `reset` (the connection went with the host). */
  answer: number | 'reset'
  /** whole: stored with exactly its bytes; absent: 404 and not listed; anything else fails the check. */
  outcome: 'whole' | 'absent' | 'partial' | 'unknown'
  detail: string
}

/** Sizes and pace: a small one (done before the signal), a quick one, and a slow one (always cut off). */
const SHAPES = [
  { size: 100 * 1024, pauseMs: 0 },
  { size: 3 * 1024 * 1024, pauseMs: 0 },
  { size: 24 * 1024 * 1024, pauseMs: 15 },
]
const PIECE = 64 * 1024
/** Each upload must have sent this much (or be done) before the signal: in flight, not just opened. */
const UNDER_WAY = 512 * 1024
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex')
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export interface InFlight {
  rec: UploadCheck
  bytes: Buffer
  sent: () => number
  done: Promise<number | 'reset'>
}

export class UploadProbes {
  readonly checks: UploadCheck[] = []
  private n = 0

  constructor(private readonly runId: string) {}

  /** Starts the uploads into `url` (host `host`); resolves once each is under way. */
  async start(host: string, url: string): Promise<InFlight[]> {
    const flights = SHAPES.map((shape) => {
      const key = `${this.runId}.upload${this.n++}`
      const bytes = randomBytes(shape.size)
      const rec: UploadCheck = {
        host,
        key,
        id: idFromKey('file', 'files.upload', key),
        size: shape.size,
        sentAtKill: 0,
        answer: 'reset',
        outcome: 'unknown',
        detail: '',
      }
      this.checks.push(rec)
      return { rec, bytes, ...send(url, key, bytes, shape.pauseMs) }
    })
    const by = Date.now() + 10_000
    let settled = 0
    for (const f of flights) void f.done.then(() => settled++)
    while (Date.now() < by && flights.some((f) => f.sent() < UNDER_WAY) && settled < flights.length) await sleep(5)
    return flights
  }

  /** At the signal: how far each upload had got. */
  signalled(flights: InFlight[]): void {
    for (const f of flights) f.rec.sentAtKill = f.sent()
  }

  /** After the signal: what each upload left, read through the hosts that are left. */
  async verify(flights: InFlight[], client: Anthropic): Promise<void> {
    const listed = async () => {
      const ids = new Set<string>()
      for await (const file of client.beta.files.list({ limit: 100 } as any)) ids.add(file.id)
      return ids
    }
    await Promise.all(flights.map(async (f) => (f.rec.answer = await f.done)))
    const all = await listed().catch((err: Error) => err)
    for (const f of flights) {
      const rec = f.rec
      try {
        const meta = await client.beta.files.retrieveMetadata(rec.id).catch((err: { status?: number }) => {
          if (err?.status === 404) return undefined
          throw err
        })
        if (all instanceof Error) throw all
        if (!meta) {
          rec.outcome = all.has(rec.id) ? 'partial' : 'absent'
          rec.detail = all.has(rec.id) ? 'listed, but its metadata is 404' : `404, not listed (${rec.sentAtKill} of ${rec.size} bytes sent at the kill)`
          continue
        }
        const back = Buffer.from(await (await client.beta.files.download(rec.id)).arrayBuffer())
        const exact = meta.size_bytes === rec.size && back.length === rec.size && sha(back) === sha(f.bytes) && all.has(rec.id)
        rec.outcome = exact ? 'whole' : 'partial'
        rec.detail = `stored ${meta.size_bytes} bytes, downloaded ${back.length}${exact ? ', exactly the bytes sent' : ', NOT the bytes sent'}${all.has(rec.id) ? '' : ', not listed'}`
      } catch (err) {
        rec.detail = `could not be looked up: ${(err as Error).message}`
      }
    }
  }
}

/** A multipart upload of `bytes`, sent chunked in pieces with `pauseMs` between them. */
function send(url: string, key: string, bytes: Buffer, pauseMs: number): { sent: () => number; done: Promise<number | 'reset'> } {
  let sent = 0
  const done = new Promise<number | 'reset'>((resolve) => {
    const req = request(`${url}/v1/files`, {
      method: 'POST',
      headers: { 'content-type': 'multipart/form-data; boundary=XX', 'transfer-encoding': 'chunked', 'idempotency-key': key },
    })
    req.on('response', (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode!))
      res.on('error', () => resolve('reset'))
    })
    req.on('error', () => resolve('reset'))
    req.write('--XX\r\ncontent-disposition: form-data; name="file"; filename="chaos.bin"\r\ncontent-type: application/octet-stream\r\n\r\n')
    const more = async () => {
      while (sent < bytes.length) {
        const piece = bytes.subarray(sent, sent + PIECE)
        sent += piece.length
        const flowing = req.write(piece)
        if (pauseMs) await sleep(pauseMs)
        if (!flowing) await new Promise<void>((r) => req.once('drain', () => r()).once('close', () => r()))
        if (req.destroyed) return
      }
      req.end('\r\n--XX--\r\n')
    }
    void more()
  })
  return { sent: () => sent, done }
}
