import { CronExpressionParser } from 'cron-parser'

/**
 * Deployment schedules (SPEC "Deployment"; the official client's `BetaManagedAgentsCronScheduleParams`): a five-field
 * POSIX cron expression read as wall-clock time in an IANA timezone. cron-parser evaluates it; this file decides
 * which expressions are accepted, since cron-parser takes more than POSIX (seconds, `L`, `W`, `#`, `?`, `H`, `@daily`).
 *
 * Across a DST change an occurrence follows cron-parser: a wall-clock time that does not exist (02:30 on the spring
 * change in America/New_York) fires once, at the first instant after the gap (03:30 EDT); one that exists twice
 * (01:30 on the autumn change) fires once, at its first instance. A schedule that names every hour (`30 * * * *`, or
 * every 30 minutes) goes by elapsed time through the repeated hour: 01:30 EDT and 01:30 EST, an hour apart, both fire.
 */

export interface CronSchedule {
  type: 'cron'
  expression: string
  timezone: string
}

/** The five fields, in order, as a problem names them. */
export const CRON_FIELDS = ['minute', 'hour', 'day of month', 'month', 'day of week'] as const

const RANGES: Record<(typeof CRON_FIELDS)[number], [number, number]> = {
  minute: [0, 59],
  hour: [0, 23],
  'day of month': [1, 31],
  month: [1, 12],
  'day of week': [0, 7],
}

const NAMES: Partial<Record<(typeof CRON_FIELDS)[number], readonly string[]>> = {
  month: ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'],
  'day of week': ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'],
}

/** How many upcoming occurrences a deployment shows (SPEC "Limits": the next five). */
export const UPCOMING_RUNS = 5

/**
 * What is wrong with a cron expression, worded to follow `schedule.expression must be …`; undefined when it is a
 * valid five-field POSIX expression. Each field is a list of `*`, a value or a range `a-b`, each optionally stepped
 * by `/n`; months and days of the week may be named (JAN, MON).
 */
export function cronProblem(expression: string): string | undefined {
  if (expression.startsWith('@')) return `five fields, not a shortcut such as ${expression.split(/\s/)[0]}`
  const fields = expression.trim().split(/\s+/)
  if (fields.length !== 5 || fields[0] === '') return `five fields (minute hour day-of-month month day-of-week), not ${fields[0] === '' ? 0 : fields.length}`
  for (const [i, field] of fields.entries()) {
    const name = CRON_FIELDS[i]!
    const problem = fieldProblem(field, name)
    if (problem) return `${problem} in the ${name} field (${JSON.stringify(field)})`
  }
  try {
    CronExpressionParser.parse(expression, { tz: 'UTC', strict: false })
  } catch (err) {
    // What passes the checks above and still fails here names a date that never occurs (31 February).
    return `a date that never occurs (${(err as Error).message})`
  }
  return undefined
}

function fieldProblem(field: string, name: (typeof CRON_FIELDS)[number]): string | undefined {
  const [lo, hi] = RANGES[name]
  const names = NAMES[name] ?? []
  const value = (s: string): number | undefined => {
    if (/^\d{1,2}$/.test(s)) return Number(s)
    const k = names.indexOf(s.toUpperCase())
    return k < 0 ? undefined : k + (name === 'month' ? 1 : 0)
  }
  for (const item of field.split(',')) {
    const special = /[LW#?H]/i.exec(item.replace(/[A-Za-z]{3}/g, (w) => (names.includes(w.toUpperCase()) ? '' : w)))
    if (special) return `${JSON.stringify(special[0])} is not POSIX cron (no L, W, #, ? or H)`
    const m = /^([^/]+)(?:\/(\d{1,2}))?$/.exec(item)
    if (!m) return `${JSON.stringify(item)} is not a value, a range or a step`
    const [, base, step] = m
    if (step !== undefined && Number(step) === 0) return 'a step of 0'
    if (base === '*') continue
    const [a, b, extra] = base!.split('-')
    if (extra !== undefined) return `${JSON.stringify(item)} is not a value, a range or a step`
    const from = value(a!)
    const to = b === undefined ? from : value(b)
    if (from === undefined || to === undefined)
      return `${JSON.stringify(item)} is not a value of ${lo}-${hi}${names.length ? ` or a name such as ${names[0]}` : ''}`
    if (from < lo || from > hi || to < lo || to > hi) return `${JSON.stringify(item)} is outside ${lo}-${hi}`
    if (from > to) return `the range ${JSON.stringify(item)} runs backwards`
  }
  return undefined
}

/** Whether `tz` names a timezone of the IANA database (as this Node's ICU knows it). */
export function isTimezone(tz: string): boolean {
  if (tz === '' || tz.length > 64) return false
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz })
    return true
  } catch {
    return false
  }
}

const iterate = (s: CronSchedule, after: number) => CronExpressionParser.parse(s.expression, { tz: s.timezone, currentDate: new Date(after) })

/** The first occurrence strictly after `after` (epoch ms); undefined when the expression never fires again (31 February). */
export function nextOccurrence(s: CronSchedule, after: number): number | undefined {
  const it = iterate(s, after)
  return it.hasNext() ? it.next().getTime() : undefined
}

/**
 * The next `count` occurrences strictly after `after` (epoch ms), as epoch ms: each the `nextOccurrence` of the one
 * before, which is what the scheduler fires. One cron-parser iterator gives the same but inside an autumn change's
 * repeated hour, where it may name a wall-clock time a second time (01:30 EDT, then 01:30 EST, for `30 1 * * *`): there
 * the next is asked afresh.
 */
export function occurrencesAfter(s: CronSchedule, after: number, count: number): number[] {
  const out: number[] = []
  let it = iterate(s, after)
  let prev = after
  while (out.length < count && it.hasNext()) {
    let t = it.next().getTime()
    if (repeatsWallClock(s.timezone, t)) {
      const fresh = nextOccurrence(s, prev)
      if (fresh === undefined) break
      if (fresh !== t) {
        t = fresh
        it = iterate(s, t)
      }
    }
    out.push(t)
    prev = t
  }
  return out
}

/** How far back a wall-clock time can repeat: DST shifts are 30 minutes (Lord Howe), an hour, or two. */
const DST_SHIFTS_MS = [1800_000, 3600_000, 7200_000]
const wallClocks = new Map<string, Intl.DateTimeFormat>()

/** Whether the wall-clock minute of `at` in `tz` was also the wall-clock minute a DST shift before it. */
function repeatsWallClock(tz: string, at: number): boolean {
  let f = wallClocks.get(tz)
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: tz,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
    })
    wallClocks.set(tz, f)
  }
  const wall = f.format(at)
  return DST_SHIFTS_MS.some((d) => f.format(at - d) === wall)
}

/** A wall-clock gap or repeat lasts at most this long (DST moves clocks by an hour, a few zones by two). */
const DST_SHIFT_MAX_MS = 3 * 3600_000

/**
 * Whether `at` (epoch ms) is an occurrence of the schedule. Walked to from a little before rather than asked as "the
 * next after `at` − 1 minute": an occurrence moved by a DST gap (02:30 → 03:30) is the next only from before the gap.
 */
export function isOccurrence(s: CronSchedule, at: number): boolean {
  if (at % 60_000 !== 0) return false
  // The common case in one step (cron-parser takes ~20 µs a step; the walk below up to 180 for an every-minute schedule).
  // Not for a wall-clock time that happened already (an autumn change's repeated hour): from a minute before its
  // second instance, cron-parser names that instance, which the walk (and occurrencesAfter) does not.
  if (nextOccurrence(s, at - 60_000) === at && !repeatsWallClock(s.timezone, at)) return true
  const it = CronExpressionParser.parse(s.expression, { tz: s.timezone, currentDate: new Date(at - DST_SHIFT_MAX_MS) })
  while (it.hasNext()) {
    const t = it.next().getTime()
    if (t >= at) return t === at
  }
  return false
}
