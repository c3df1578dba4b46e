import { CounterFamily, type GaugeChild, GaugeFamily, ReadGauge } from '../../metrics/index.js'

/** What single activation does, by kind (`session`, `agent`, …: as few as the kinds). */
export const activations = new CounterFamily('troupe_actor_activations_total', 'Actors brought into memory (loaded, or created here), by kind', ['kind'])
export const passivations = new CounterFamily('troupe_actor_passivations_total', 'Idle actors that left memory, by kind', ['kind'])
export const actorsLive = new ReadGauge('troupe_actors_live', 'Actors in memory on this host, by kind', ['kind'])
export const partitionMoves = new CounterFamily(
  'troupe_partition_moves_total',
  'Partitions this host gained or lost (handed over, taken over, given up), by kind and direction',
  ['kind', 'direction'],
)

const mailboxDepth = new GaugeFamily(
  'troupe_actor_mailbox_depth',
  "Writes queued in actors' mailboxes (the one running included), by kind: a kind whose depth grows writes slower than it is asked",
  ['kind'],
)

/** The mailbox depth gauge of a kind, bound once per mailbox. */
export const mailboxDepthOf = (kind: string): GaugeChild => mailboxDepth.child(kind)
