import { CounterFamily, HistogramFamily, SECONDS_SLOW } from '../../../metrics/index.js'

const fires = new CounterFamily(
  'troupe_schedule_fires_total',
  "Scheduled occurrences fired from this process, by the deployment's answer (queued, duplicate, skipped)",
  ['outcome'],
)
const delay = new HistogramFamily(
  'troupe_schedule_fire_delay_seconds',
  'How late an occurrence was fired after its scheduled time (a slot, the grace for the preferred scheduler, a claim)',
  [],
  SECONDS_SLOW,
)
const late = delay.child()

/** An occurrence fired `lateS` seconds after its time; `outcome` the deployment's answer. */
export function countFire(outcome: string, lateS: number): void {
  fires.child(outcome).inc()
  late.observe(lateS)
}
