import t from 'tap'
import { sampleSum } from '../helpers/prom-text.js'
import { raw, startTroupe } from '../helpers/troupe.js'
import { until } from '../helpers/wait.js'
import { deploy, deploymentStack } from '../deployments/_helpers.js'
import { highCardinality, scrape } from './_helpers.js'

/**
 * `TROUPE_METRICS=off` on a `troupe serve`, and `troupe orchestrate` serving its own metrics on `TROUPE_METRICS_PORT`:
 * its scheduler's firings counted as they happen, on a test clock where a minute passes every 3 real seconds.
 */

const CLOCK = `start=2026-03-01T00:00:30Z,rate=20,since=${Date.now()}`
const s = await deploymentStack({ TROUPE_SCHEDULE_CLOCK: CLOCK, TROUPE_METRICS: 'off', TROUPE_SANDBOX: 'local' })

t.test('metrics off: nothing is served, the inventory does not list it, the banner says so', async (t) => {
  const r = await raw(s.url, 'GET', '/metrics')
  t.equal(r.status, 404)
  t.equal(r.json?.error?.type, 'not_found_error')
  const listed = await raw(s.url, 'GET', '/openapi.yaml')
  t.notMatch(listed.text, /"\/metrics":/)
  t.match(s.troupe.stdout(), /metrics +off \(TROUPE_METRICS=off\)/)
})

t.test('troupe orchestrate serves its own metrics on TROUPE_METRICS_PORT; schedule firings are counted', async (t) => {
  const o = await startTroupe({ role: 'orchestrate', natsUrl: s.nats.url, env: { TROUPE_SCHEDULE_CLOCK: CLOCK, TROUPE_METRICS_PORT: '0' } })
  t.teardown(() => o.killNow())
  const port = await until('the metrics line', () => /http:\/\/127\.0\.0\.1:(\d+)\/metrics \(TROUPE_METRICS_PORT\)/.exec(o.stdout())?.[1], 5000)
  const url = `http://127.0.0.1:${port}`
  const first = await scrape(url)
  t.equal(sampleSum(first, 'troupe_nats_connected'), 1)
  t.ok(first.has('process_resident_memory_bytes'), "the process's own metrics")
  t.equal((await fetch(`${url}/other`)).status, 404)
  t.equal((await fetch(`${url}/metrics`, { method: 'POST' })).status, 405)

  await deploy(s.client, { schedule: { type: 'cron', expression: '* * * * *', timezone: 'UTC' } })
  const fired = await until(
    'an occurrence fired',
    async () => {
      const f = await scrape(url)
      return sampleSum(f, 'troupe_schedule_fires_total', { outcome: 'queued' }) >= 1 ? f : undefined
    },
    30_000,
    250,
  )
  t.ok(sampleSum(fired, 'troupe_schedule_fire_delay_seconds_count') >= 1)
  t.same(highCardinality(fired), [])
})
