import t from 'tap'
import { parseClock } from '../../protocol/clock.js'
import { cronProblem, isOccurrence, isTimezone, nextOccurrence, occurrencesAfter, type CronSchedule } from '../../protocol/schedule.js'

// protocol/schedule.ts: which cron expressions a deployment takes, and its occurrences across DST changes.

const cron = (expression: string, timezone: string): CronSchedule => ({ type: 'cron', expression, timezone })
const next = (s: CronSchedule, after: string, n = 3) => occurrencesAfter(s, Date.parse(after), n).map((x) => new Date(x).toISOString())
const at = (iso: string) => Date.parse(iso)

t.test('America/New_York: a skipped 02:30 fires once at 03:30; a repeated 01:30 once, its first instance', async (t) => {
  const spring = cron('30 2 * * *', 'America/New_York')
  // 8 March 2026: 02:00 EST jumps to 03:00 EDT.
  t.same(next(spring, '2026-03-07T12:00:00Z'), ['2026-03-08T07:30:00.000Z', '2026-03-09T06:30:00.000Z', '2026-03-10T06:30:00.000Z'])
  t.ok(isOccurrence(spring, at('2026-03-08T07:30:00Z')), '03:30 EDT on the day of the gap')
  t.notOk(isOccurrence(spring, at('2026-03-08T06:30:00Z')), 'not an hour before')
  const autumn = cron('30 1 * * *', 'America/New_York')
  // 1 November 2026: 02:00 EDT falls back to 01:00 EST, so 01:30 happens twice.
  t.same(next(autumn, '2026-10-31T12:00:00Z'), ['2026-11-01T05:30:00.000Z', '2026-11-02T06:30:00.000Z', '2026-11-03T06:30:00.000Z'])
  t.ok(isOccurrence(autumn, at('2026-11-01T05:30:00Z')), '01:30 EDT')
  t.notOk(isOccurrence(autumn, at('2026-11-01T06:30:00Z')), 'not 01:30 EST as well')
})

t.test('read from inside the night of an autumn change, the upcoming occurrences are the ones the scheduler fires', async (t) => {
  // From 00:50 EDT on 1 November 2026, one cron-parser iterator names 01:30 twice (EDT, then EST); each occurrence as
  // the next after the one before (what the scheduler fires) names it once.
  t.same(next(cron('30 1 * * *', 'America/New_York'), '2026-11-01T04:50:00Z'), [
    '2026-11-01T05:30:00.000Z',
    '2026-11-02T06:30:00.000Z',
    '2026-11-03T06:30:00.000Z',
  ])
  // A schedule over every hour goes by elapsed time through the repeated hour, as cron-parser defines: 01:30 EDT and
  // 01:30 EST are an hour apart, and both fire.
  t.same(next(cron('30 * * * *', 'America/New_York'), '2026-11-01T04:50:00Z'), [
    '2026-11-01T05:30:00.000Z',
    '2026-11-01T06:30:00.000Z',
    '2026-11-01T07:30:00.000Z',
  ])
  t.ok(isOccurrence(cron('30 * * * *', 'America/New_York'), at('2026-11-01T06:30:00Z')))
})

t.test('Europe/Berlin: the same rules on its own change dates', async (t) => {
  const s = cron('30 2 * * *', 'Europe/Berlin')
  // 29 March 2026: 02:00 CET jumps to 03:00 CEST.
  t.same(next(s, '2026-03-28T12:00:00Z'), ['2026-03-29T01:30:00.000Z', '2026-03-30T00:30:00.000Z', '2026-03-31T00:30:00.000Z'])
  t.ok(isOccurrence(s, at('2026-03-29T01:30:00Z')))
  // 25 October 2026: 03:00 CEST falls back to 02:00 CET, so 02:30 happens twice.
  t.same(next(s, '2026-10-24T12:00:00Z'), ['2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z', '2026-10-27T01:30:00.000Z'])
  t.ok(isOccurrence(s, at('2026-10-25T00:30:00Z')))
  t.notOk(isOccurrence(s, at('2026-10-25T01:30:00Z')), 'the second 02:30 does not fire')
  const weekdays = cron('0 9 * * 1-5', 'Europe/Berlin')
  t.same(next(weekdays, '2026-03-27T12:00:00Z', 2), ['2026-03-30T07:00:00.000Z', '2026-03-31T07:00:00.000Z'], 'Friday → Monday, after the change')
})

t.test('isOccurrence, nextOccurrence', async (t) => {
  const s = cron('*/15 * * * *', 'UTC')
  t.ok(isOccurrence(s, at('2026-01-01T00:45:00Z')))
  t.notOk(isOccurrence(s, at('2026-01-01T00:44:00Z')))
  t.notOk(isOccurrence(s, at('2026-01-01T00:45:00.500Z')), 'not on a minute')
  t.equal(nextOccurrence(s, at('2026-01-01T00:45:00Z')), at('2026-01-01T01:00:00Z'), 'strictly after')
  t.ok(isOccurrence(cron('0 0 * * 7', 'UTC'), at('2026-01-04T00:00:00Z')), 'day of week 7 is Sunday')
})

t.test('cron problems name the field and the rule', async (t) => {
  for (const ok of ['* * * * *', '0 9 * * MON-FRI', '0 0 1 JAN *', '0 0 * * 7', '5,10-20/5 */2 1-31 1-12 0-7']) t.equal(cronProblem(ok), undefined, ok)
  const bad: Array<[string, RegExp]> = [
    ['* * * *', /five fields.*not 4/],
    ['* * * * * *', /five fields.*not 6/],
    ['', /five fields/],
    ['@daily', /not a shortcut such as @daily/],
    ['60 * * * *', /"60" is outside 0-59 in the minute field/],
    ['* 24 * * *', /outside 0-23 in the hour field/],
    ['0 0 0 * *', /outside 1-31 in the day of month field/],
    ['0 0 * 13 *', /outside 1-12 in the month field/],
    ['0 0 * * 8', /outside 0-7 in the day of week field/],
    ['0 0 L * *', /not POSIX cron.*day of month/],
    ['0 0 1W * *', /not POSIX cron/],
    ['0 0 * * 5#2', /not POSIX cron.*day of week/],
    ['0 0 ? * *', /not POSIX cron/],
    ['*/0 * * * *', /a step of 0 in the minute field/],
    ['5-1 * * * *', /runs backwards/],
    ['x * * * *', /"x" is not a value/],
    ['0 0 31 2 *', /a date that never occurs/],
  ]
  for (const [e, rule] of bad) t.match(cronProblem(e), rule, JSON.stringify(e))
})

t.test('timezones', async (t) => {
  for (const tz of ['UTC', 'America/New_York', 'Europe/Berlin', 'Asia/Kolkata']) t.ok(isTimezone(tz), tz)
  for (const tz of ['', 'Mars/Olympus', 'EST5EDT/Nope', 'x'.repeat(65)]) t.notOk(isTimezone(tz), tz)
})

t.test('the schedule clock', async (t) => {
  let real = 1_000_000
  const clock = parseClock('start=2030-01-01T00:00:00Z,rate=60,since=1000000', () => real)
  t.equal(clock(), at('2030-01-01T00:00:00Z'))
  real += 1000
  t.equal(clock(), at('2030-01-01T00:01:00Z'), 'a real second is a minute at rate 60')
  for (const [spec, rule] of [
    ['rate=2', /start/],
    ['start=x', /start/],
    ['start=2030-01-01T00:00:00Z,rate=0', /rate/],
    ['start=2030-01-01T00:00:00Z,since=-1', /since/],
    ['start=2030-01-01T00:00:00Z,speed=2', /unknown key/],
    ['start', /key=value/],
  ] as const)
    t.throws(() => parseClock(spec), rule, spec)
})
