import { nextOccurrence } from '../../../protocol/schedule.js'
import type { Scheduled } from './schedules.js'

/**
 * How far back (clock ms) a scheduler fires occurrences that passed without a run: those missed while no scheduler
 * ran, and those held up (a holder that died keeps its claim until its lease ends). Every unfired occurrence of this
 * window fires, oldest first; older ones never do. At most five runs of an every-minute schedule, one of an hourly one.
 */
export const CATCH_UP_MS = 5 * 60_000

/**
 * The occurrence of a deployment to fire next, given the one it fired last (`after`, exclusive), or undefined when
 * its schedule never fires again. Oldest unfired first: every scheduler fires a deployment's occurrences in the same
 * order, so none is fired after a later one (which would make it a `duplicate`, lost). An expression cron-parser
 * refuses (none is stored: create and update check it) never fires.
 */
export function nextToFire(s: Scheduled, after: number, now: number): number | undefined {
  try {
    return nextOccurrence(s.schedule, fireAfter(s, after, now))
  } catch {
    return undefined
  }
}

/** The instant (exclusive) after which `nextToFire` looks for the occurrence. */
export const fireAfter = (s: Scheduled, after: number, now: number): number => Math.max(after, s.lastScheduled, s.firesFrom - 1, now - CATCH_UP_MS)
