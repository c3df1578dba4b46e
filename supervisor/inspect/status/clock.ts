import { decode } from '../../../protocol/codec.js'
import { parseClock } from '../../../protocol/clock.js'
import { ORCHESTRATOR_TTL_MS, type OrchestratorBeat } from '../../../actors/deployment/index.js'

/** A scheduler (`orchestrate`, or the one inside `start`) as its beat in `troupe_orchestrators` shows it. */
export interface SchedulerView {
  id: string
  beat_age_ms: number
}

/**
 * The time schedules see, which `TROUPE_SCHEDULE_CLOCK` (a testing aid) may set apart from wall time: read from a live
 * scheduler's beat (its clock's reading and rate), else from this process's own TROUPE_SCHEDULE_CLOCK, else wall time.
 */
export interface ScheduleClockView {
  source: 'scheduler' | 'TROUPE_SCHEDULE_CLOCK' | 'wall'
  /** The scheduler whose beat told it. */
  scheduler?: string
  /** Now, on that clock (RFC 3339). */
  now: string
  /** Its ms per real ms. */
  rate: number
  /** Whether it reads wall time (within a second, at the same rate). */
  wall: boolean
}

/** The live schedulers, newest beat first, and the schedule clock. */
export function scheduleClock(
  beats: Map<string, Uint8Array> | undefined,
  now: number,
  env: NodeJS.ProcessEnv,
): { schedulers: SchedulerView[]; clock: ScheduleClockView; at: number } {
  const live: Array<SchedulerView & { beat: OrchestratorBeat }> = []
  for (const [key, v] of beats ?? []) {
    const beat = decode<OrchestratorBeat>(v)
    // The bucket's max age is the TTL, but a key outlives it until the server next ages it out.
    if (now - beat.at <= ORCHESTRATOR_TTL_MS) live.push({ id: key.slice('orch.'.length), beat_age_ms: now - beat.at, beat })
  }
  live.sort((a, b) => a.beat_age_ms - b.beat_age_ms)
  const schedulers = live.map(({ id, beat_age_ms }) => ({ id, beat_age_ms }))
  const told = live.find((s) => s.beat.clock !== undefined)
  const view = (source: ScheduleClockView['source'], at: number, rate: number, scheduler?: string) => ({
    schedulers,
    at,
    clock: { source, ...(scheduler ? { scheduler } : {}), now: new Date(at).toISOString(), rate, wall: rate === 1 && Math.abs(at - now) < 1000 },
  })
  if (told) {
    const rate = told.beat.rate ?? 1
    return view('scheduler', Math.floor(told.beat.clock! + (now - told.beat.at) * rate), rate, told.id)
  }
  const spec = env.TROUPE_SCHEDULE_CLOCK?.trim()
  if (spec) {
    try {
      const clock = parseClock(spec, () => now)
      return view('TROUPE_SCHEDULE_CLOCK', clock(), clock.rate ?? 1)
    } catch {
      // A setting the servers would refuse at start is no clock of theirs: wall time.
    }
  }
  return view('wall', now, 1)
}
