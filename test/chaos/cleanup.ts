// Everything the run starts registers a synchronous killer here, so a failure, an exception or a Ctrl-C still
// leaves no nats-server or troupe process behind (the cluster's watchdogs cover a SIGKILL of the driver itself).

const killers: Array<() => void> = []
const savers: Array<() => void> = []
let done = false

/** Runs (synchronously) when the run breaks before its report: keep the evidence before the processes go. */
export function onBrokenRun(save: () => void): void {
  savers.push(save)
}

function saveEvidence(): void {
  for (const s of savers.splice(0)) {
    try {
      s()
    } catch {}
  }
}

export function onCleanup(kill: () => void): void {
  killers.push(kill)
}

/** Runs every killer once, newest first (hosts before the NATS they use). */
export function cleanupNow(broken = false): void {
  if (done) return
  if (broken) saveEvidence()
  done = true
  for (const k of killers.reverse()) {
    try {
      k()
    } catch {}
  }
}

export function installCleanupHandlers(): void {
  process.on('exit', () => cleanupNow())
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(sig, () => {
      console.error(`\nchaos: ${sig}, stopping everything`)
      saveEvidence()
      cleanupNow()
      process.exit(130)
    })
  }
  process.on('uncaughtException', (err) => {
    console.error('chaos: uncaught exception', err)
    saveEvidence()
    cleanupNow()
    process.exit(2)
  })
  process.on('unhandledRejection', (err) => {
    console.error('chaos: unhandled rejection', err)
    saveEvidence()
    cleanupNow()
    process.exit(2)
  })
}
