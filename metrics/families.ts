import { Counter, Gauge, Histogram } from 'prom-client'
import { registry } from './registry.js'

/**
 * Metric families whose children are plain numbers on pre-bound objects, read by prom-client only at a scrape.
 * prom-client's own children build a label string and validate the labels at every `inc` and `observe`; these do
 * neither: the hot paths (every HTTP request, every model request) add to a field and nothing more. Each family
 * subclasses prom-client's metric of its type and answers its `get()`, so the registry formats it as its own.
 */

/** Whether recording is on: `TROUPE_METRICS=off` turns it off (`setRecording`) before anything records. */
let recording = true

/** Turns recording on or off for every family of this process. Default on. */
export function setRecording(on: boolean): void {
  recording = on
}

export const isRecording = (): boolean => recording

type Labels = Record<string, string>

interface Sample {
  labels: Labels
  value: number
  metricName?: string
}

/**
 * A family's children, one per combination of label values, found by nested map lookups (no key string is built):
 * `child('GET', '/v1/agents', '200')` costs three `Map.get`s once the child exists.
 */
class Children<C> {
  private readonly root = new Map<string, unknown>()
  readonly all: Array<{ labels: Labels; child: C }> = []

  constructor(
    private readonly names: readonly string[],
    private readonly make: () => C,
  ) {}

  get(values: readonly string[]): C {
    if (values.length !== this.names.length) throw new Error(`expected ${this.names.length} label values, got ${values.length}`)
    let level = this.root
    const last = values.length - 1
    for (let i = 0; i < last; i++) {
      let next = level.get(values[i]!) as Map<string, unknown> | undefined
      if (!next) level.set(values[i]!, (next = new Map()))
      level = next
    }
    const key = last < 0 ? '' : values[last]!
    let child = level.get(key) as C | undefined
    if (child === undefined) {
      child = this.make()
      level.set(key, child)
      const labels: Labels = {}
      this.names.forEach((n, i) => {
        labels[n] = values[i]!
      })
      this.all.push({ labels, child })
    }
    return child
  }
}

export class CounterChild {
  value = 0
  inc(n = 1): void {
    if (recording) this.value += n
  }
}

export class GaugeChild {
  value = 0
  set(v: number): void {
    if (recording) this.value = v
  }
  inc(n = 1): void {
    if (recording) this.value += n
  }
  dec(n = 1): void {
    if (recording) this.value -= n
  }
}

export class HistogramChild {
  /** Per bucket (not cumulative); the last one is `+Inf`. */
  readonly counts: Float64Array
  sum = 0
  count = 0

  constructor(private readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length + 1)
  }

  observe(v: number): void {
    if (!recording) return
    const b = this.bounds
    let i = 0
    while (i < b.length && v > b[i]!) i++
    this.counts[i]!++
    this.sum += v
    this.count++
  }
}

/** A counter family. Label values are read at a scrape; a family with no labels has one child, `child()`. */
export class CounterFamily<L extends string = string> extends Counter<L> {
  private readonly children: Children<CounterChild>
  private readonly about: About

  constructor(name: string, help: string, labelNames: readonly L[] = []) {
    super({ name, help, labelNames, registers: [registry] })
    this.about = { name, help }
    this.children = new Children(labelNames, () => new CounterChild())
  }

  child(...values: string[]): CounterChild {
    return this.children.get(values)
  }

  override async get(): ReturnType<Counter<L>['get']> {
    return answer(
      this.about,
      'counter',
      this.children.all.map(({ labels, child }) => ({ labels, value: child.value })),
    )
  }
}

/** A gauge family of children set as things change. */
export class GaugeFamily<L extends string = string> extends Gauge<L> {
  private readonly children: Children<GaugeChild>
  private readonly about: About

  constructor(name: string, help: string, labelNames: readonly L[] = []) {
    super({ name, help, labelNames, registers: [registry] })
    this.about = { name, help }
    this.children = new Children(labelNames, () => new GaugeChild())
  }

  child(...values: string[]): GaugeChild {
    return this.children.get(values)
  }

  override async get(): ReturnType<Gauge<L>['get']> {
    return answer(
      this.about,
      'gauge',
      this.children.all.map(({ labels, child }) => ({ labels, value: child.value })),
    )
  }
}

/** What a source of a read gauge answers: one value (a family without labels), or values by label values. */
export type GaugeReading = number | Iterable<readonly [values: readonly string[], value: number]>

/**
 * A gauge read at a scrape from its sources (several gateways or hosts in one process each add theirs): a number
 * somebody already keeps (streams open, actors in memory, a cgroup's memory) costs nothing until it is asked for.
 */
export class ReadGauge<L extends string = string> extends Gauge<L> {
  private readonly sources = new Set<() => GaugeReading>()
  private readonly about: About

  constructor(
    name: string,
    help: string,
    private readonly names: readonly L[] = [],
  ) {
    super({ name, help, labelNames: names, registers: [registry] })
    this.about = { name, help }
  }

  /** Adds a source; the function returned removes it (its owner stopped). Without sources the gauge has no samples. */
  track(source: () => GaugeReading): () => void {
    this.sources.add(source)
    return () => this.sources.delete(source)
  }

  override async get(): ReturnType<Gauge<L>['get']> {
    const sums = new Map<string, { labels: Labels; value: number }>()
    for (const source of this.sources) {
      const reading = source()
      for (const [values, value] of typeof reading === 'number' ? [[[], reading] as const] : reading) {
        const key = values.join('\u0000')
        const at = sums.get(key)
        if (at) at.value += value
        else sums.set(key, { labels: Object.fromEntries(this.names.map((n, i) => [n, values[i] ?? ''])), value })
      }
    }
    return answer(this.about, 'gauge', [...sums.values()])
  }
}

/** A histogram family: bucket counts, sum and count per child, cumulative only when scraped. */
export class HistogramFamily<L extends string = string> extends Histogram<L> {
  private readonly children: Children<HistogramChild>
  private readonly about: About

  constructor(
    name: string,
    help: string,
    labelNames: readonly L[],
    private readonly bounds: readonly number[],
  ) {
    super({ name, help, labelNames, buckets: [...bounds], registers: [registry] })
    this.about = { name, help }
    this.children = new Children(labelNames, () => new HistogramChild(bounds))
  }

  child(...values: string[]): HistogramChild {
    return this.children.get(values)
  }

  override async get(): ReturnType<Histogram<L>['get']> {
    const { name } = this.about
    const values: Sample[] = []
    for (const { labels, child } of this.children.all) {
      let acc = 0
      this.bounds.forEach((le, i) => {
        acc += child.counts[i]!
        values.push({ labels: { ...labels, le: String(le) }, value: acc, metricName: `${name}_bucket` })
      })
      values.push({ labels: { ...labels, le: '+Inf' }, value: child.count, metricName: `${name}_bucket` })
      values.push({ labels, value: child.sum, metricName: `${name}_sum` })
      values.push({ labels, value: child.count, metricName: `${name}_count` })
    }
    return answer(this.about, 'histogram', values)
  }

  /** What prom-client's registry asks a histogram for, when it has it, instead of `get()`. */
  getForPromString(): ReturnType<Histogram<L>['get']> {
    return this.get()
  }
}

interface About {
  name: string
  help: string
}

/**
 * A family's `get()` answer, as prom-client's registry reads it (`MetricObjectWithValues`): its declared type names
 * the metric type by an enum that is a string at run time, so the object is handed over as the base's type.
 */
function answer<T>(about: About, type: 'counter' | 'gauge' | 'histogram', values: Sample[]): T {
  return { name: about.name, help: about.help, type, aggregator: 'sum', collect: () => undefined, values } as unknown as T
}

/** Seconds, from 1 ms to 1 min: HTTP requests, tool runs. */
export const SECONDS_FAST = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

/** Seconds, from 10 ms to 10 min: model requests, webhook lag, schedule delays. */
export const SECONDS_SLOW = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600]
