import type { Rng } from './rng.js'
import type { RawExpect, RawSpec, RawWrite, Victims } from './types.js'

/**
 * Malformed HTTP, byte for byte: what a broken client, a scanner or a proxy bug puts on the wire. Most of it
 * is the HTTP parser's to refuse; the few exchanges that are valid after all (a request line split across
 * packets, HTTP/1.0, pipelining) must reach our routes and get a proper answer.
 */

interface RawCase {
  name: string
  expect: RawExpect
  method?: string
  hangUp?: boolean
  /** How many answers an `answer` case must get (pipelined requests: one each). */
  answers?: number
  writes: (rng: Rng, v: Victims) => Array<string | Buffer | RawWrite>
}

const H = 'host: 127.0.0.1\r\n'
const body = '{"name":"raw"}'
const post = (extra: string, payload: string) => `POST /v1/environments HTTP/1.1\r\n${H}content-type: application/json\r\n${extra}\r\n${payload}`

const CASES: RawCase[] = [
  // Request lines.
  { name: 'empty request line', expect: 'parser', writes: () => ['\r\n\r\n'] },
  { name: 'method only', expect: 'parser', writes: () => ['GET\r\n\r\n'] },
  { name: 'no version', expect: 'parser', writes: () => ['GET /healthz\r\n\r\n'] },
  { name: 'HTTP/9.9', expect: 'parser', writes: () => [`GET /healthz HTTP/9.9\r\n${H}\r\n`] },
  { name: 'HTTP/2.0 on h1', expect: 'parser', writes: () => [`GET /healthz HTTP/2.0\r\n${H}\r\n`] },
  { name: 'lower-case version', expect: 'parser', writes: () => [`GET /healthz http/1.1\r\n${H}\r\n`] },
  { name: 'extra token on request line', expect: 'parser', writes: () => [`GET /healthz HTTP/1.1 extra\r\n${H}\r\n`] },
  { name: 'double space in request line', expect: 'parser', writes: () => [`GET  /healthz HTTP/1.1\r\n${H}\r\n`] },
  { name: 'tab separators', expect: 'parser', writes: () => [`GET\t/healthz\tHTTP/1.1\r\n${H}\r\n`] },
  { name: 'bare LF line endings', expect: 'parser', writes: () => [`GET /healthz HTTP/1.1\n${H.trim()}\n\n`] },
  {
    name: 'raw non-UTF-8 bytes in path',
    expect: 'parser',
    writes: () => [Buffer.concat([Buffer.from('GET /v1/agents/agent_'), Buffer.from([0xff, 0xfe, 0xed, 0xa0, 0x80]), Buffer.from(` HTTP/1.1\r\n${H}\r\n`)])],
  },
  { name: 'NUL in path', expect: 'parser', writes: () => [`GET /v1/agents/agent_\u0000x HTTP/1.1\r\n${H}\r\n`] },
  { name: 'absolute-form target', expect: 'parser', writes: () => [`GET http://127.0.0.1/healthz HTTP/1.1\r\n${H}\r\n`] },
  { name: 'asterisk target', expect: 'parser', method: 'OPTIONS', writes: () => [`OPTIONS * HTTP/1.1\r\n${H}\r\n`] },
  { name: 'target without leading slash', expect: 'parser', writes: () => [`GET healthz HTTP/1.1\r\n${H}\r\n`] },
  { name: '64 KB URL', expect: 'parser', writes: () => [`GET /v1/agents/agent_${'A'.repeat(64 * 1024)} HTTP/1.1\r\n${H}\r\n`] },
  // Headers.
  { name: 'header without colon', expect: 'parser', writes: () => [`GET /healthz HTTP/1.1\r\n${H}this is not a header\r\n\r\n`] },
  { name: 'space before colon', expect: 'parser', writes: () => [`GET /healthz HTTP/1.1\r\n${H}x-a : 1\r\n\r\n`] },
  { name: 'obs-fold continuation', expect: 'parser', writes: () => [`GET /healthz HTTP/1.1\r\n${H}x-a: 1\r\n  continued\r\n\r\n`] },
  { name: 'NUL in header value', expect: 'parser', writes: () => [`GET /healthz HTTP/1.1\r\n${H}x-a: a\u0000b\r\n\r\n`] },
  { name: '20 KB header', expect: 'parser', writes: () => [`GET /healthz HTTP/1.1\r\n${H}x-big: ${'a'.repeat(20 * 1024)}\r\n\r\n`] },
  {
    name: '500 headers',
    expect: 'parser',
    writes: () => [`GET /healthz HTTP/1.1\r\n${H}${Array.from({ length: 500 }, (_, i) => `x-h${i}: ${i}\r\n`).join('')}\r\n`],
  },
  { name: 'no Host header', expect: 'parser', writes: () => ['GET /healthz HTTP/1.1\r\n\r\n'] },
  { name: 'two Host headers', expect: 'parser', writes: () => [`GET /healthz HTTP/1.1\r\n${H}${H}\r\n`] },
  // Framing.
  {
    name: 'duplicate content-length, same value',
    expect: 'parser',
    method: 'POST',
    writes: () => [post(`content-length: ${body.length}\r\ncontent-length: ${body.length}\r\n`, body)],
  },
  {
    name: 'duplicate content-length, different values',
    expect: 'parser',
    method: 'POST',
    writes: () => [post(`content-length: ${body.length}\r\ncontent-length: 3\r\n`, body)],
  },
  { name: 'content-length list', expect: 'parser', method: 'POST', writes: () => [post(`content-length: ${body.length}, ${body.length}\r\n`, body)] },
  { name: 'negative content-length', expect: 'parser', method: 'POST', writes: () => [post('content-length: -1\r\n', body)] },
  { name: 'non-numeric content-length', expect: 'parser', method: 'POST', writes: () => [post('content-length: abc\r\n', body)] },
  { name: 'content-length over 2^64', expect: 'parser', method: 'POST', writes: () => [post('content-length: 99999999999999999999999\r\n', body)] },
  {
    name: 'content-length and chunked',
    expect: 'parser',
    method: 'POST',
    writes: () => [post(`content-length: 4\r\ntransfer-encoding: chunked\r\n`, `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`)],
  },
  { name: 'chunked: non-hex size', expect: 'parser', method: 'POST', writes: () => [post('transfer-encoding: chunked\r\n', `zz\r\n${body}\r\n0\r\n\r\n`)] },
  {
    name: 'chunked: size overflow',
    expect: 'parser',
    method: 'POST',
    writes: () => [post('transfer-encoding: chunked\r\n', `ffffffffffffffffff\r\n${body}\r\n0\r\n\r\n`)],
  },
  { name: 'chunked: negative size', expect: 'parser', method: 'POST', writes: () => [post('transfer-encoding: chunked\r\n', `-5\r\n${body}\r\n0\r\n\r\n`)] },
  {
    name: 'chunked: missing CRLF after data',
    expect: 'parser',
    method: 'POST',
    writes: () => [post('transfer-encoding: chunked\r\n', `${body.length.toString(16)}\r\n${body}0\r\n\r\n`)],
  },
  {
    name: 'chunked: chunk longer than its size',
    expect: 'parser',
    method: 'POST',
    writes: () => [post('transfer-encoding: chunked\r\n', `2\r\n${body}\r\n0\r\n\r\n`)],
  },
  {
    name: 'chunked: garbage extension',
    expect: 'parser',
    method: 'POST',
    writes: () => [post('transfer-encoding: chunked\r\n', `${body.length.toString(16)};\u0001\u0002=\r\n${body}\r\n0\r\n\r\n`)],
  },
  {
    name: 'chunked: ends without last chunk',
    expect: 'none',
    method: 'POST',
    hangUp: true,
    writes: () => [post('transfer-encoding: chunked\r\n', `${body.length.toString(16)}\r\n${body}\r\n`)],
  },
  { name: 'unknown transfer-encoding', expect: 'parser', method: 'POST', writes: () => [post('transfer-encoding: gzip\r\n', body)] },
  {
    name: 'transfer-encoding: chunked, identity',
    expect: 'parser',
    method: 'POST',
    writes: () => [post('transfer-encoding: chunked, identity\r\n', `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`)],
  },
  // Valid after all: these must reach our routes.
  {
    name: 'request line split over two writes',
    expect: 'answer',
    writes: () => ['GET /heal', { bytes: Buffer.from(`thz HTTP/1.1\r\n${H}\r\n`), delayMs: 30 }],
  },
  {
    name: 'headers split byte by byte',
    expect: 'answer',
    writes: () => [...`GET /readyz HTTP/1.1\r\n${H}\r\n`].map((c, i) => ({ bytes: Buffer.from(c), delayMs: i % 8 === 0 ? 2 : 0 })),
  },
  { name: 'HTTP/1.0', expect: 'answer', writes: () => ['GET /healthz HTTP/1.0\r\n\r\n'] },
  {
    name: 'HTTP/1.0 POST with body',
    expect: 'answer',
    method: 'POST',
    writes: () => [`POST /v1/environments HTTP/1.0\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`],
  },
  { name: 'pipelined GET + GET', expect: 'answer', answers: 2, writes: () => [`GET /healthz HTTP/1.1\r\n${H}\r\nGET /v1/nope HTTP/1.1\r\n${H}\r\n`] },
  {
    name: 'pipelined bad JSON + GET',
    expect: 'answer',
    answers: 2,
    method: 'POST',
    writes: () => [`${post('content-length: 3\r\n', '{"a')}GET /healthz HTTP/1.1\r\n${H}\r\n`],
  },
  { name: 'expect: 100-continue', expect: 'answer', method: 'POST', writes: () => [post(`expect: 100-continue\r\ncontent-length: ${body.length}\r\n`, body)] },
  {
    name: 'body split over writes',
    expect: 'answer',
    method: 'POST',
    writes: () => [post(`content-length: ${body.length}\r\n`, body.slice(0, 5)), { bytes: Buffer.from(body.slice(5)), delayMs: 30 }],
  },
  // Hostile multipart uploads: each is refused with an envelope, or stored whole (a well-formed one).
  ...multipartCases(),
  // Garbage and hang-ups.
  { name: 'garbage bytes', expect: 'parser', writes: (rng) => [rng.bytes(rng.between(1, 4096))] },
  {
    name: 'garbage after a valid request',
    expect: 'parser',
    writes: (rng) => [Buffer.concat([Buffer.from(`GET /healthz HTTP/1.1\r\n${H}\r\n`), rng.bytes(512)])],
  },
  { name: 'TLS client hello on plain HTTP', expect: 'parser', writes: () => [Buffer.from('16030100a5010000a10303', 'hex')] },
  { name: 'half-sent headers then close', expect: 'none', hangUp: true, writes: () => ['GET /healthz HTTP/1.1\r\nhost: 127'] },
  { name: 'half-sent body then close', expect: 'none', method: 'POST', hangUp: true, writes: () => [post('content-length: 1000\r\n', '{"name":"')] },
  {
    name: 'half-sent big body then close',
    expect: 'none',
    method: 'POST',
    hangUp: true,
    writes: () => [post(`content-length: ${8 * 1024 * 1024}\r\n`, '{"name":"'), Buffer.alloc(1024 * 1024, 0x61)],
  },
  {
    name: 'half-sent events body to a live session then close',
    expect: 'none',
    method: 'POST',
    hangUp: true,
    writes: (rng, v) => [
      `POST /v1/sessions/${rng.pick(v.sessions)}/events HTTP/1.1\r\n${H}content-type: application/json\r\ncontent-length: 500\r\n\r\n{"events":[`,
    ],
  },
]

/** Multipart bodies a broken or hostile client sends to POST /v1/files, framed by a correct content-length. */
function multipartCases(): RawCase[] {
  const upload = (contentType: string, payload: string | Buffer) => {
    const bytes = typeof payload === 'string' ? Buffer.from(payload, 'latin1') : payload
    return Buffer.concat([Buffer.from(`POST /v1/files HTTP/1.1\r\n${H}content-type: ${contentType}\r\ncontent-length: ${bytes.length}\r\n\r\n`), bytes])
  }
  const mp = 'multipart/form-data; boundary=B'
  const part = (disposition: string, headers = '', data = 'x') => `--B\r\ncontent-disposition: ${disposition}\r\n${headers}\r\n${data}\r\n`
  const cases: Array<[string, string, string | Buffer]> = [
    ['multipart without boundary', 'multipart/form-data', part('form-data; name="file"; filename="a"')],
    ['multipart with empty boundary', 'multipart/form-data; boundary=', '--\r\n\r\n'],
    ['multipart never closed', mp, part('form-data; name="file"; filename="a"')],
    ['multipart only the closing boundary', mp, '--B--\r\n'],
    ['multipart part without disposition', mp, `--B\r\ncontent-type: text/plain\r\n\r\nx\r\n--B--\r\n`],
    ['multipart traversal and CRLF in filename', mp, `${part('form-data; name="file"; filename="../../etc/pa\\r\\nss%0d%0awd"')}--B--\r\n`],
    ['multipart filename* in a bogus charset', mp, `${part('form-data; name="file"; filename*=x-bogus\'\'%ff%fe')}--B--\r\n`],
    ['multipart 200 parts', mp, `${Array.from({ length: 200 }, (_, i) => part(`form-data; name="f${i}"`)).join('')}--B--\r\n`],
    ['multipart 64 KB part header', mp, `${part('form-data; name="file"; filename="a"', `x-pad: ${'a'.repeat(64 * 1024)}\r\n`)}--B--\r\n`],
    ['multipart base64 transfer encoding', mp, `${part('form-data; name="file"; filename="a"', 'content-transfer-encoding: base64\r\n', '!!!')}--B--\r\n`],
    ['multipart file field as text', mp, `${part('form-data; name="file"')}--B--\r\n`],
    ['multipart binary garbage', mp, Buffer.concat([Buffer.from('--B\r\n'), Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919) % 256))])],
    ['multipart body under a JSON type', 'application/json', `${part('form-data; name="file"; filename="a"')}--B--\r\n`],
  ]
  return cases.map(([name, type, payload]) => ({ name, expect: 'answer', method: 'POST', writes: () => [upload(type, payload)] }))
}

export const RAW_CASE_COUNT = CASES.length

/** Raw case `occurrence` (they rotate, so a run long enough covers them all). */
export function buildRaw(rng: Rng, occurrence: number, v: Victims): RawSpec {
  const c = CASES[occurrence % CASES.length]!
  const writes = c.writes(rng, v).map((w): RawWrite => (typeof w === 'string' ? { bytes: Buffer.from(w, 'utf8') } : Buffer.isBuffer(w) ? { bytes: w } : w))
  return {
    kind: 'raw',
    class: 'raw-http',
    route: c.name,
    method: c.method ?? 'GET',
    writes,
    hangUp: c.hangUp ?? false,
    expect: c.expect,
    answers: c.answers ?? 1,
    note: c.name,
  }
}
