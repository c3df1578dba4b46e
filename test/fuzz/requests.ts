import { exampleBody, exampleQuery, ID_FIELDS, type Json } from './examples.js'
import { deepArrays, deepMixed, deepObjects, hostileId, hostileString, malformedJson, pathSegment, wellFormedId, wrongValue } from './generators.js'
import { buildHostileHeader } from './hostile-headers.js'
import { get, paths, pathString, spliced, withKey, type JsonPath } from './mutate.js'
import type { Rng } from './rng.js'
import { fillPath, GETS, NOT_GET, otherKindIds, prefixOf, TARGETS, victimFor, victimPicker, WITH_BODY, WITH_PARAMS, type Target } from './targets.js'
import type { ClassName, HttpSpec, Victims } from './types.js'

type HttpClass = Exclude<ClassName, 'raw-http'>

/**
 * Builds request `occurrence` of a class. Targets rotate with the occurrence, so every route of the table
 * gets each class once the class has run as many times as there are routes; everything else comes from `rng`.
 */
export function buildHttp(cls: HttpClass, rng: Rng, occurrence: number, v: Victims): HttpSpec {
  switch (cls) {
    case 'malformed-json':
      return malformed(rotate(NOT_GET, occurrence), rng, v)
    case 'deep-json':
      return deep(rotate(WITH_BODY, occurrence), rng, v)
    case 'wrong-type':
      return wrongType(rotate(WITH_BODY, occurrence), rng, v)
    case 'array-for-object':
      return arrayForObject(rotate(WITH_BODY, occurrence), rng, v)
    case 'hostile-path-id':
      return hostilePath(rotate(WITH_PARAMS, occurrence), rng, v)
    case 'hostile-body-id':
      return hostileBodyId(rotate(WITH_BODY, occurrence), rng, v)
    case 'hostile-query':
      return hostileQuery(rotate(GETS, occurrence), rng, v)
    case 'odd-method':
      return oddMethod(rotate(TARGETS, occurrence), rng, v)
    case 'big-body':
      return bigBody(rotate(WITH_BODY, occurrence), rng, v)
    case 'hostile-header':
      return buildHostileHeader(rng, occurrence, v)
  }
}

const rotate = <T>(items: readonly T[], i: number): T => items[i % items.length]!

const JSON_HEADERS: Array<[string, string]> = [['content-type', 'application/json']]

/** A path with every parameter a live victim (or, one time in four, a well-formed id that names nothing). */
function livePath(t: Target, rng: Rng, v: Victims): string {
  const pick = victimPicker(rng, v)
  return fillPath(t, (p) => (rng.chance(0.25) ? wellFormedId(rng, prefixOf(p)) : pick(p)))
}

/** Idempotency-Key values a POST may carry: malformed ones, ones that mean something to NATS, and a fine one. */
const IDEMPOTENCY_KEYS = ['', ' ', 'x'.repeat(256), 'k e y', 'ключ', '*', '>', 'a.b', '%00', '$JS.API', 'fine-key-1']

function spec(cls: HttpClass, t: Target, rng: Rng, v: Victims, note: string, body?: Buffer | string, target?: string): HttpSpec {
  const headers: Array<[string, string]> = body === undefined ? [] : [...JSON_HEADERS]
  if (t.method === 'POST' && rng.chance(0.2)) headers.push(['idempotency-key', rng.pick(IDEMPOTENCY_KEYS)])
  return {
    kind: 'http',
    class: cls,
    route: `${t.method} ${t.path}`,
    method: t.method,
    target: target ?? livePath(t, rng, v),
    headers,
    ...(body === undefined ? {} : { body: typeof body === 'string' ? Buffer.from(body, 'utf8') : body }),
    note,
  }
}

const exampleText = (t: Target, rng: Rng, v: Victims) => JSON.stringify(exampleBody(t.operationId, v, rng) ?? {})

function malformed(t: Target, rng: Rng, v: Victims): HttpSpec {
  const bad = malformedJson(rng, exampleText(t, rng, v))
  return spec('malformed-json', t, rng, v, `malformed JSON: ${bad.label}`, bad.value)
}

function deep(t: Target, rng: Rng, v: Victims): HttpSpec {
  const depth = rng.pick([100, 1_000, 10_000, 100_000])
  const shape = rng.pick(['arrays', 'objects', 'mixed'] as const)
  const fragment = shape === 'arrays' ? deepArrays(depth) : shape === 'objects' ? deepObjects(depth) : deepMixed(depth)
  const example = exampleBody(t.operationId, v, rng)!
  // The whole body, or one field of a valid body (some fields take any JSON: input_schema, resources).
  const where = rng.chance(0.3) ? [] : rng.pick(paths(example))
  const body = where.length ? spliced(example, where, fragment) : fragment
  return spec('deep-json', t, rng, v, `${depth}-deep ${shape} at ${pathString(where)}`, body)
}

function wrongType(t: Target, rng: Rng, v: Victims): HttpSpec {
  const example = exampleBody(t.operationId, v, rng)!
  const value = wrongValue(rng)
  if (rng.chance(0.15)) {
    // An extra key somewhere: unknown fields, and names that mean something to a JS object.
    const objects = [[] as JsonPath, ...paths(example).filter((p) => isObject(get(example, p)))]
    const at = rng.pick(objects)
    const key = rng.pick(['unknown_field', '__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', '', 'type'])
    return spec('wrong-type', t, rng, v, `extra key ${JSON.stringify(key)}=${value.label} at ${pathString(at)}`, withKey(example, at, key, value.value))
  }
  const at = rng.pick(paths(example))
  return spec('wrong-type', t, rng, v, `${pathString(at)} = ${value.label}`, spliced(example, at, value.value))
}

const isObject = (x: Json | undefined): x is { [k: string]: Json } => x !== null && typeof x === 'object' && !Array.isArray(x)

function arrayForObject(t: Target, rng: Rng, v: Victims): HttpSpec {
  const example = exampleBody(t.operationId, v, rng)!
  const fragment = rng.pick(['[]', '["x"]', '[{}]', '[[]]', `[${JSON.stringify(example)}]`])
  const objects = paths(example).filter((p) => isObject(get(example, p)))
  const choice = rng.weighted([
    ['body', 2],
    ['metadata', 2],
    ['field', 4],
  ] as const)
  if (choice === 'body' || !objects.length) return spec('array-for-object', t, rng, v, `body = ${clip(fragment, 40)}`, fragment)
  if (choice === 'metadata' && 'metadata' in (example as object)) {
    return spec('array-for-object', t, rng, v, `.metadata = ${clip(fragment, 40)}`, spliced(example, ['metadata'], fragment))
  }
  const at = rng.pick(objects)
  return spec('array-for-object', t, rng, v, `${pathString(at)} = ${clip(fragment, 40)}`, spliced(example, at, fragment))
}

function hostilePath(t: Target, rng: Rng, v: Victims): HttpSpec {
  const param = rng.pick(t.params)
  const id = hostileId(rng, prefixOf(param), victimFor(rng, param, v), otherKindIds(param, v))
  const seg = pathSegment(rng, id.value)
  const pick = victimPicker(rng, v)
  const target = fillPath(t, (p) => (p === param ? seg.value : pick(p)))
  const body = t.hasBody ? exampleText(t, rng, v) : undefined
  return spec('hostile-path-id', t, rng, v, `${param} = ${id.label} (${seg.label})`, body, target)
}

function hostileBodyId(t: Target, rng: Rng, v: Victims): HttpSpec {
  const example = exampleBody(t.operationId, v, rng)!
  const idPaths = paths(example).filter((p) => ID_FIELDS.has(String(p[p.length - 1])))
  const slots: Array<{ at: JsonPath; wrap: (s: string) => string }> = idPaths.map((at) => ({
    at,
    // A list of ids gets one hostile element; a scalar is replaced.
    wrap: Array.isArray(get(example, at)) ? (s: string) => `[${s}]` : (s: string) => s,
  }))
  if (isObject(example) && 'resources' in example) {
    slots.push({ at: ['resources'], wrap: (s) => `[{"type":"file","file_id":${s},"mount_path":"/mnt/x"}]` })
  }
  if (!slots.length) {
    // This operation takes no ids in its body: hostile strings in its string fields instead.
    const strings = paths(example).filter((p) => typeof get(example, p) === 'string')
    const at = rng.pick(strings.length ? strings : paths(example))
    const s = hostileString(rng)
    return spec('hostile-body-id', t, rng, v, `${pathString(at)} = ${s.label}`, spliced(example, at, JSON.stringify(s.value)))
  }
  const slot = rng.pick(slots)
  const key = String(slot.at[slot.at.length - 1])
  const prefix = { environment_id: 'env', agent: 'agent', id: 'agent', vault_ids: 'vlt', file_id: 'file', session_thread_id: 'sthr' }[key] ?? 'toolu'
  const id = hostileId(rng, prefix, v.agents[0]!, [v.environments[0]!, v.sessions[0]!])
  return spec('hostile-body-id', t, rng, v, `${pathString(slot.at)} = ${id.label}`, spliced(example, slot.at, slot.wrap(JSON.stringify(id.value))))
}

/** Query values that break each parameter's rule in a different way. */
function badQueryValue(rng: Rng, key: string, v: Victims): { value: string; label: string } {
  const b64 = (s: string) => Buffer.from(s).toString('base64url')
  const common = [
    '-1',
    '0',
    '1e9',
    '1000000000',
    '1.5',
    'abc',
    '',
    ' 1',
    '0x10',
    'Infinity',
    'NaN',
    '9'.repeat(400),
    'true',
    '[]',
    'null',
    '%',
    '%ZZ',
    '%ED%A0%80',
    '%00',
    'ÿ',
    '\uD800',
    '*',
    '>',
    'a..b',
  ]
  const byKey: Record<string, string[]> = {
    page: [
      'garbage',
      '!!!',
      b64('{"f":"x","a":1}'),
      b64('{"f":1}'),
      b64('null'),
      b64('[]'),
      b64('"s"'),
      b64('{"a":{}}'),
      b64(deepArrays(10_000)),
      'x'.repeat(5000),
    ],
    'created_at[gte]': ['garbage', '2020-13-45T00:00:00Z', '99999-01-01', '2020-01-01', '-1', '1e9'],
    'created_at[lt]': ['garbage', '2020-02-30T00:00:00Z', 'T'],
    agent_id: [hostileId(rng, 'agent', v.agents[0]!, [v.environments[0]!]).value],
    after: [hostileId(rng, 'sevt', 'sevt_01JX0000000000000000000000', [v.sessions[0]!]).value],
    'statuses[]': ['garbage', 'IDLE', 'idle,running'],
    'types[]': ['garbage', 'user.*', 'user.>', '_processed'],
    'event_deltas[]': ['garbage', 'user.message'],
    order: ['sideways', 'ASC', ''],
    version: ['0', '-1', '1.0', '99999999999999999999'],
  }
  const pool = [...common, ...(byKey[key] ?? [])]
  const value = rng.pick(pool)
  return { value, label: `${key}=${clip(JSON.stringify(value), 40)}` }
}

function encodeQuery(rng: Rng, pairs: Array<[string, string]>): string {
  const raw = rng.chance(0.2)
  const enc = (s: string) => {
    if (raw) return s
    try {
      return encodeURIComponent(s).replace(/%5B/g, '[').replace(/%5D/g, ']')
    } catch {
      return s
    }
  }
  return pairs.map(([k, val]) => `${enc(k)}=${enc(val)}`).join('&')
}

function hostileQuery(t: Target, rng: Rng, v: Victims): HttpSpec {
  const pairs = exampleQuery(t.operationId, v)
  const extraKeys = ['limit', 'page', 'agent_id', 'after', 'order', 'created_at[gte]', 'statuses[]', 'types[]', 'include_archived']
  const move = rng.weighted([
    ['value', 6],
    ['repeat', 2],
    ['key', 2],
    ['shape', 1],
  ] as const)
  let note: string
  let query: string
  if (move === 'value' || (move === 'repeat' && !pairs.length)) {
    const key = pairs.length && rng.chance(0.7) ? rng.pick(pairs)[0] : rng.pick(extraKeys)
    const bad = badQueryValue(rng, key, v)
    const rest = pairs.filter(([k]) => k !== key)
    query = encodeQuery(rng, [...rest, [key, bad.value]])
    note = `query ${bad.label}`
  } else if (move === 'repeat') {
    const [key, val] = rng.pick(pairs)
    const times = rng.pick([2, 3, 1000])
    query = encodeQuery(rng, [...pairs, ...Array.from({ length: times - 1 }, (_, i): [string, string] => [key, i % 2 ? val : `${val}0`])])
    note = `query ${key} repeated ${times} times`
  } else if (move === 'key') {
    const key = rng.pick([
      'limit[]',
      'limit[gte]',
      '__proto__',
      'constructor',
      'hasOwnProperty',
      'toString',
      'created_at[gte][]',
      'page[]',
      '[]',
      '',
      'a'.repeat(5000),
    ])
    query = encodeQuery(rng, [...pairs, [key, rng.pick(['1', 'x', ''])]])
    note = `query key ${clip(JSON.stringify(key), 30)}`
  } else {
    query = rng.pick(['&&&', '=', '==', '=x', 'limit', 'limit&limit', '%', '%%%', '&limit=1&', '?', '#frag', 'a=1;b=2', 'x'.repeat(10 * 1024)])
    note = `query shape ${clip(JSON.stringify(query), 30)}`
  }
  const body = t.hasBody ? exampleText(t, rng, v) : undefined
  return spec('hostile-query', t, rng, v, note, body, `${livePath(t, rng, v)}?${query}`)
}

function oddMethod(t: Target, rng: Rng, v: Victims): HttpSpec {
  const method = rng.pick([
    'HEAD',
    'PUT',
    'PATCH',
    'OPTIONS',
    'TRACE',
    'CONNECT',
    'get',
    'post',
    'delete',
    'Get',
    'head',
    'FOO',
    'BREW',
    'M-SEARCH',
    'PROPFIND',
    'X'.repeat(100),
    'GET\t',
  ])
  const body = rng.chance(0.5) && t.hasBody ? exampleText(t, rng, v) : undefined
  return { ...spec('odd-method', t, rng, v, `method ${clip(JSON.stringify(method), 30)}`, body), method }
}

function bigBody(t: Target, rng: Rng, v: Victims): HttpSpec {
  const size = rng.between(1, 8) * 1024 * 1024
  const example = exampleBody(t.operationId, v, rng)!
  const kind = rng.pick(['string', 'garbage', 'array', 'keys'] as const)
  let body: Buffer | string
  if (kind === 'string') {
    const strings = paths(example).filter((p) => typeof get(example, p) === 'string')
    const at = rng.pick(strings.length ? strings : paths(example))
    body = spliced(example, at, JSON.stringify('x'.repeat(size)))
    return { ...spec('big-body', t, rng, v, `${size >> 20} MiB string at ${pathString(at)}`, body), chunked: rng.chance(0.3) }
  }
  if (kind === 'garbage') body = rng.bytes(size)
  else if (kind === 'array') body = spliced(example, [rng.pick(Object.keys(example as object))], `[${'0,'.repeat(size / 2 - 1)}0]`)
  else {
    const n = Math.floor(size / 16)
    const keys = Array.from({ length: n }, (_, i) => `"k${i.toString(36).padStart(8, '0')}":"v"`).join(',')
    body = 'metadata' in (example as object) ? spliced(example, ['metadata'], `{${keys}}`) : `{${keys}}`
  }
  return { ...spec('big-body', t, rng, v, `${size >> 20} MiB ${kind}`, body), chunked: rng.chance(0.3) }
}

const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n)}…` : s)
