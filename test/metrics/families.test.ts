import t from 'tap'
import { CounterFamily, HistogramFamily, LabelCap, ReadGauge, registry, setRecording, statusLabel } from '../../metrics/index.js'
import { parsePromText, sampleSum } from '../helpers/prom-text.js'

// Pure: the families and the parser, in this process's registry (no server).
const counter = new CounterFamily('test_things_total', 'Things, by kind', ['kind', 'outcome'])
const histogram = new HistogramFamily('test_wait_seconds', 'Waits "quoted" \\ and\nnewline', ['kind'], [0.1, 1])
const gauge = new ReadGauge('test_open', 'Open things', ['kind'])

t.test('children count, histograms are cumulative, read gauges sum their sources', async (t) => {
  counter.child('a', 'ok').inc()
  counter.child('a', 'ok').inc(2)
  counter.child('b\n"x"', 'error').inc()
  histogram.child('a').observe(0.05)
  histogram.child('a').observe(0.5)
  histogram.child('a').observe(5)
  const untrack = gauge.track(() => [[['a'], 2]])
  gauge.track(() => [
    [['a'], 3],
    [['b'], 1],
  ])
  const f = parsePromText(await registry.metrics())
  t.equal(sampleSum(f, 'test_things_total', { kind: 'a', outcome: 'ok' }), 3)
  t.equal(sampleSum(f, 'test_things_total', { kind: 'b\n"x"' }), 1, 'label values escaped and read back')
  t.equal(f.get('test_things_total')?.type, 'counter')
  t.equal(f.get('test_wait_seconds')?.help, 'Waits "quoted" \\ and\nnewline')
  t.equal(sampleSum(f, 'test_wait_seconds_bucket', { kind: 'a', le: '0.1' }), 1)
  t.equal(sampleSum(f, 'test_wait_seconds_bucket', { kind: 'a', le: '1' }), 2)
  t.equal(sampleSum(f, 'test_wait_seconds_bucket', { kind: 'a', le: '+Inf' }), 3)
  t.equal(sampleSum(f, 'test_wait_seconds_count', { kind: 'a' }), 3)
  t.equal(sampleSum(f, 'test_wait_seconds_sum', { kind: 'a' }), 5.55)
  t.equal(sampleSum(f, 'test_open', { kind: 'a' }), 5)
  untrack()
  t.equal(sampleSum(parsePromText(await registry.metrics()), 'test_open', { kind: 'a' }), 3)
})

t.test('recording off: children stay as they are', async (t) => {
  setRecording(false)
  t.teardown(() => setRecording(true))
  const c = counter.child('c', 'ok')
  c.inc()
  histogram.child('c').observe(1)
  const f = parsePromText(await registry.metrics())
  t.equal(sampleSum(f, 'test_things_total', { kind: 'c' }), 0)
  t.equal(sampleSum(f, 'test_wait_seconds_count', { kind: 'c' }), 0)
})

t.test('label helpers keep values few', async (t) => {
  const cap = new LabelCap(2, 8)
  t.same(
    ['a', 'b', 'c', 'a', 'waytoolongvalue'].map((v) => cap.of(v)),
    ['a', 'b', 'other', 'a', 'other'],
  )
  t.same([200, 499, 99, 600, 1.5].map(statusLabel), ['200', '499', 'other', 'other', 'other'])
})

t.test('the parser refuses what Prometheus would', async (t) => {
  const bad = [
    'x 1', // no final newline
    '# TYPE x counter\nx{a="1"} 1\n# TYPE y gauge\ny 1\nx{a="2"} 1\n', // apart from its family
    'x{a="1"} 1\nx{a="1"} 2\n', // a series twice
    'x{a="\\t"} 1\n', // a bad escape
    'x{1a="b"} 1\n', // a bad label name
    'x one\n', // a bad value
    '# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n', // not cumulative
    '# TYPE h histogram\nh_bucket{le="1"} 1\nh_sum 1\nh_count 1\n', // no +Inf
    '# TYPE h histogram\nh_bucket{le="+Inf"} 2\nh_sum 1\nh_count 1\n', // count is not +Inf
    'x 1\n# TYPE x counter\n', // TYPE after samples
  ]
  for (const text of bad) t.throws(() => parsePromText(`${text}`), JSON.stringify(text))
  t.ok(parsePromText('# HELP x a\n# TYPE x counter\nx{a="1"} 1\nx{a="2"} 2 1700000000\n\n# other comment\n'))
  // What Prometheus reads (Go's ParseFloat), prom-client's `Nan` among it.
  t.ok(Number.isNaN(parsePromText('# TYPE g gauge\ng Nan\n').get('g')?.samples[0]?.value))
})
