// What the chaos run records while it runs; the checks read only these (and the stored histories afterwards).

export const FAULT_KINDS = ['host-kill', 'host-stop', 'nats-leader', 'stream-leader', 'nats-stop', 'sandbox-kill'] as const
export type FaultKind = (typeof FAULT_KINDS)[number]
/** Kinds that need sandbox hosts (`--sandbox-hosts N`): left out of the default draw without them. */
export const SANDBOX_HOST_FAULTS: readonly FaultKind[] = ['sandbox-kill']

/** What a turn asks of the fake model; the text of the user.message says it (see model.ts). */
export type TurnKind = 'bash' | 'custom' | 'interrupt'

/** Status of an attempt that got no HTTP answer. */
export const CONNECT_FAILED = 0
export const TIMED_OUT = -1

/** One HTTP attempt, as the client-side balancer saw it (the official client's retries are separate attempts). */
export interface Attempt {
  /** Epoch ms when the attempt was sent. */
  at: number
  /** Until the response headers (or the failure). */
  ms: number
  method: string
  /** Path without the query. */
  path: string
  session?: string
  /** The gateway (host name) the attempt went to. */
  backend: string
  /** Which of the run's clients sent it: driver, probe, check (set by `x-chaos-client`) or sse. */
  client: string
  /** HTTP status, or CONNECT_FAILED / TIMED_OUT. */
  status: number
  retryAfterMs?: string
  /** The Idempotency-Key the attempt carried. */
  key?: string
  /** `x-stainless-retry-count`: 0 for the first attempt of a call. */
  retry: number
  requestId?: string
  error?: string
}

/** One logical POST of client events (all of its retries), and what the server acknowledged. */
export interface PostRecord {
  session: string
  key: string
  kind: 'message' | 'interrupt' | 'tool_result'
  at: number
  doneAt: number
  ok: boolean
  /** Event ids of the acknowledged reply. */
  ids: string[]
  error?: string
}

/** One logical client call (retries included), for latency. */
export interface CallRecord {
  at: number
  ms: number
  op: string
  ok: boolean
}

export interface TurnRecord {
  session: string
  kind: TurnKind
  tag: string
  start: number
  end: number
  outcome: 'done' | 'timeout' | 'error'
  error?: string
}

/** How soon one session answered after a fault began (undefined: not within the probe's bound). */
export interface ProbeResult {
  session: string
  /** The first successful probe attempt (ms after the signal): a read, or for a host SIGKILL a write. */
  firstOkMs?: number
  /**
   * Host SIGKILL only: when one write sent at the signal through the official client, retrying as it does by
   * itself (`retry-after-ms`, its own back-off), succeeded. What a user sees; the check holds it to the budget.
   */
  clientMs?: number
}

export interface FaultWindow {
  kind: FaultKind
  /** Host name (h1…), sandbox host name (s1…) or NATS server name (n1…). */
  target: string
  start: number
  end: number
  /** What happened when, for the report. */
  steps: Array<{ at: number; what: string }>
  /** Sessions the probes watched: those the faulted host owned, or all (bounded) for NATS faults. */
  probes: ProbeResult[]
  /** What the probes asked: a host SIGKILL is measured by writes (the actor must be running again), the rest by reads. */
  probe: 'read' | 'write'
  error?: string
}

/** One start of a troupe host, with the times the readiness check compares. */
export interface HostStart {
  host: string
  restart: boolean
  spawnAt: number
  /** When stdout printed the start-up block ("listening on …"). */
  blockAt?: number
  /** Earliest NATS connection named `troupe` opened after the spawn (the servers' /connz). */
  natsAt?: number
  /** The failing checks /readyz named while not ready, with how many polls said each. */
  notReady?: string
  /** First /readyz 200. */
  readyAt?: number
  error?: string
}

export interface ReaderRecord {
  session: string
  /** Event ids in the order received, across reconnects. */
  ids: string[]
  types: string[]
  connects: number
  /** Opened before the session's first POST: it must have seen the history from its first event. */
  fromStart: boolean
  /** Why each connection ended (other than our own close). */
  cuts: string[]
}
