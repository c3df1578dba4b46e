import t from 'tap'
import { readConfig } from '../../supervisor/config.js'
import { startTroupe } from '../helpers/troupe.js'

t.test('TROUPE_SCHEDULE_CLOCK: a test clock every process agrees on; unset, the system clock', async (t) => {
  const clock = readConfig({ TROUPE_SCHEDULE_CLOCK: 'start=2026-03-01T00:00:00Z,rate=60,since=1000' }, false).scheduleClock
  t.equal(clock.rate, 60)
  const now = readConfig({}, false).scheduleClock()
  t.ok(Math.abs(now - Date.now()) < 1000)
})

t.test('a malformed TROUPE_SCHEDULE_CLOCK stops start-up, saying what is wrong', async (t) => {
  for (const [v, why] of [
    ['soon', /expected key=value pairs/],
    ['start=yesterday', /start must be an RFC 3339 time/],
    ['start=2026-03-01T00:00:00Z,rate=0', /rate must be a number above 0/],
    ['start=2026-03-01T00:00:00Z,speed=2', /unknown key "speed"/],
  ] as const) {
    t.throws(() => readConfig({ TROUPE_SCHEDULE_CLOCK: v }, false), { message: new RegExp(`^TROUPE_SCHEDULE_CLOCK: ${why.source}.*\\(was "${v}"\\)$`) })
  }
  // The process says it before joining anything.
  await t.rejects(startTroupe({ role: 'orchestrate', natsUrl: 'nats://127.0.0.1:1', env: { TROUPE_SCHEDULE_CLOCK: 'soon' } }), {
    message: /troupe exited with 1:[\s\S]*TROUPE_SCHEDULE_CLOCK: expected key=value pairs/,
  })
})
