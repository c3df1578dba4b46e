/**
 * A strict parser of the Prometheus text exposition format (0.0.4), for tests: it throws, naming the line, on anything
 * a Prometheus server would refuse or read differently (a bad name or escape, a sample before its TYPE or apart from its
 * family, a series twice, a histogram whose buckets are not cumulative or do not end at `+Inf` = `_count`).
 */

export interface PromSample {
  name: string
  labels: Record<string, string>
  value: number
}

export interface PromFamily {
  name: string
  type: 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped'
  help?: string
  samples: PromSample[]
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped'])
const SUFFIXES: Record<string, string[]> = { histogram: ['_bucket', '_sum', '_count'], summary: ['_sum', '_count'] }

export function parsePromText(text: string): Map<string, PromFamily> {
  const families = new Map<string, PromFamily>()
  const series = new Set<string>()
  const typed = new Set<string>()
  let current: PromFamily | undefined
  const lines = text.split('\n')
  if (lines.at(-1) !== '') throw new Error('the exposition does not end with a newline')
  lines.pop()
  lines.forEach((line, i) => {
    const where = `line ${i + 1} (${JSON.stringify(line)})`
    if (line === '') return
    if (line.startsWith('#')) {
      const m = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line)
      if (!m) return // another comment
      const [, kind, name, rest] = m as unknown as [string, string, string, string]
      if (!NAME.test(name)) throw new Error(`${where}: bad metric name`)
      const fam = enter(name, where)
      if (kind === 'HELP') {
        if (fam.help !== undefined) throw new Error(`${where}: a second HELP`)
        fam.help = unescapeText(rest, false, where)
      } else {
        if (!TYPES.has(rest)) throw new Error(`${where}: unknown type`)
        if (fam.samples.length || fam.type !== 'untyped' || typed.has(name)) throw new Error(`${where}: TYPE after samples or twice`)
        typed.add(name)
        fam.type = rest as PromFamily['type']
      }
      return
    }
    const sample = parseSample(line, where)
    const fam = familyOf(sample.name)
    if (!fam || fam !== current) {
      // A sample of a family not declared just before it: an untyped family of its own, unless that family is closed.
      if (fam && fam !== current) throw new Error(`${where}: sample apart from its family ${fam.name}`)
      const own = enter(sample.name, where)
      own.samples.push(sample)
    } else fam.samples.push(sample)
    const key = `${sample.name}{${Object.entries(sample.labels)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
      .join(',')}}`
    if (series.has(key)) throw new Error(`${where}: series ${key} twice`)
    series.add(key)
  })
  for (const fam of families.values()) if (fam.type === 'histogram') checkHistogram(fam)
  return families

  function enter(name: string, where: string): PromFamily {
    let fam = families.get(name)
    if (fam && fam !== current) throw new Error(`${where}: family ${name} appears twice`)
    if (!fam) {
      fam = { name, type: 'untyped', samples: [] }
      families.set(name, fam)
      current = fam
    }
    return fam
  }

  function familyOf(sampleName: string): PromFamily | undefined {
    const exact = families.get(sampleName)
    if (exact) return exact
    for (const [suffix, types] of [
      ['_bucket', ['histogram']],
      ['_sum', ['histogram', 'summary']],
      ['_count', ['histogram', 'summary']],
    ] as const) {
      if (!sampleName.endsWith(suffix)) continue
      const fam = families.get(sampleName.slice(0, -suffix.length))
      if (fam && (types as readonly string[]).includes(fam.type)) return fam
    }
    return undefined
  }
}

function parseSample(line: string, where: string): PromSample {
  const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)( -?\d+)?$/.exec(line)
  if (!m) throw new Error(`${where}: not a sample`)
  const [, name, braces, raw] = m as unknown as [string, string, string | undefined, string]
  const labels: Record<string, string> = {}
  if (braces) {
    let rest = braces.slice(1, -1)
    while (rest.length) {
      const l = /^([^=]+)="((?:[^"\\]|\\.)*)"(,?)/.exec(rest)
      if (!l) throw new Error(`${where}: bad labels`)
      const [all, key, value, comma] = l as unknown as [string, string, string, string]
      if (!LABEL.test(key)) throw new Error(`${where}: bad label name ${key}`)
      if (key in labels) throw new Error(`${where}: label ${key} twice`)
      labels[key] = unescapeText(value, true, where)
      rest = rest.slice(all.length)
      if (!comma && rest.length) throw new Error(`${where}: labels not separated by commas`)
    }
  }
  return { name, labels, value: number(raw, where) }
}

/**
 * A sample's value as Prometheus reads it (Go's ParseFloat: `NaN` and `Inf` in any case; prom-client writes `Nan`, for
 * instance the event loop's mean lag when no sample was taken since the last scrape).
 */
function number(raw: string, where: string): number {
  if (/^\+?inf$/i.test(raw)) return Number.POSITIVE_INFINITY
  if (/^-inf$/i.test(raw)) return Number.NEGATIVE_INFINITY
  if (/^nan$/i.test(raw)) return Number.NaN
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(raw)) throw new Error(`${where}: bad value ${raw}`)
  return Number(raw)
}

/** Label values escape `\\`, `\"` and `\n`; HELP text `\\` and `\n`. Any other escape is an error. */
function unescapeText(s: string, quoted: boolean, where: string): string {
  return s.replace(/\\(.)/g, (_, c: string) => {
    if (c === '\\') return '\\'
    if (c === 'n') return '\n'
    if (c === '"' && quoted) return '"'
    throw new Error(`${where}: bad escape \\${c}`)
  })
}

function checkHistogram(fam: PromFamily): void {
  const byLabels = new Map<string, { buckets: Array<[number, number]>; count?: number; sum?: number }>()
  for (const s of fam.samples) {
    const { le, ...rest } = s.labels
    const key = JSON.stringify(Object.entries(rest).sort(([a], [b]) => (a < b ? -1 : 1)))
    let h = byLabels.get(key)
    if (!h) byLabels.set(key, (h = { buckets: [] }))
    if (s.name === `${fam.name}_bucket`) {
      if (le === undefined) throw new Error(`${fam.name}: a bucket without le`)
      h.buckets.push([number(le, fam.name), s.value])
    } else if (s.name === `${fam.name}_count`) h.count = s.value
    else if (s.name === `${fam.name}_sum`) h.sum = s.value
    else if (!(SUFFIXES.histogram ?? []).some((x) => s.name === fam.name + x)) throw new Error(`${fam.name}: sample ${s.name} is not a histogram's`)
  }
  for (const [key, h] of byLabels) {
    const last = h.buckets.at(-1)
    if (!last || last[0] !== Number.POSITIVE_INFINITY) throw new Error(`${fam.name}${key}: no +Inf bucket last`)
    h.buckets.forEach(([le, v], i) => {
      const prev = h.buckets[i - 1]
      if (prev && (prev[0] >= le || prev[1] > v)) throw new Error(`${fam.name}${key}: buckets not increasing and cumulative at le=${le}`)
    })
    if (h.count !== last[1]) throw new Error(`${fam.name}${key}: _count ${h.count} is not the +Inf bucket ${last[1]}`)
    if (h.sum === undefined) throw new Error(`${fam.name}${key}: no _sum`)
  }
}

/** The sum of the samples of `name` whose labels include `labels`; 0 when none (a child not made yet). */
export function sampleSum(families: Map<string, PromFamily>, name: string, labels: Record<string, string> = {}): number {
  let sum = 0
  for (const fam of families.values()) {
    for (const s of fam.samples) {
      if (s.name !== name) continue
      if (Object.entries(labels).every(([k, v]) => s.labels[k] === v)) sum += s.value
    }
  }
  return sum
}

/** Label names that would make a series per object or per request. */
const ID_LABELS = /^(session|agent|environment|request|rid|deployment|vault|webhook|file|skill|memory|thread|work)(_id)?$/

/** An id of ours (`sesn_01J…`, `req_…`: a prefix and a ULID) or a UUID, anywhere in a label value. */
const ID_VALUE = /[a-z]+_[0-9A-HJKMNP-TV-Z]{26}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/

/** Every label that names an object or a request, or whose value holds an id: none may exist. */
export function highCardinality(families: Map<string, PromFamily>): string[] {
  const found: string[] = []
  for (const fam of families.values()) {
    for (const s of fam.samples) {
      for (const [k, v] of Object.entries(s.labels)) {
        if (ID_LABELS.test(k) || ID_VALUE.test(v)) found.push(`${s.name}{${k}=${JSON.stringify(v)}}`)
      }
    }
  }
  return found
}
