import { Piscina } from 'piscina'
import type { MitmCA } from '@anthropic-ai/sandbox-runtime/dist/sandbox/mitm-ca.js'
import type { Leaf, LeafTask } from './leaf-worker.js'

let pool: Piscina<LeafTask, Leaf> | undefined

/** One thread for the process's certificates, started at the first, gone after 30 s without work. */
function workers(): Piscina<LeafTask, Leaf> {
  // Run from sources (tests, TROUPE_FROM_SOURCE) the worker is TypeScript, and needs tsx's loader.
  const fromSource = import.meta.url.endsWith('.ts')
  pool ??= new Piscina({
    filename: new URL(`./leaf-worker.${fromSource ? 'ts' : 'js'}`, import.meta.url).href,
    minThreads: 0,
    maxThreads: 1,
    idleTimeout: 30_000,
    execArgv: fromSource ? ['--import', import.meta.resolve('tsx')] : [],
  })
  return pool
}

/** A new CA's certificate and key (PEM), made on the worker thread. */
export function newCa(): Promise<Leaf> {
  return workers().run({ ca: true })
}

/** A leaf older than this is minted again (the vendor's leaves are valid 99 days; a server may run longer). */
const LEAF_RENEW_MS = 30 * 24 * 3600_000

/**
 * The leaf certificates of one interception CA (tls.ts), minted on a worker thread before the proxy needs them: the
 * vendor's proxy mints a missing one synchronously on the event loop, which would stall every session of the server for
 * 55–130 ms per new host name. `ready(host)` is awaited before a CONNECT to a secret's host is terminated (proxy.ts);
 * what it minted sits in the CA's own cache, where the vendor's code finds it.
 */
export class Leaves {
  private readonly minted = new Map<string, { at: number; done: Promise<void> }>()

  constructor(private readonly ca: MitmCA) {}

  /** The leaf for `host` is in the CA's cache (minted now, or earlier and not due for renewal). */
  ready(host: string): Promise<void> {
    const known = this.minted.get(host)
    if (known && Date.now() - known.at < LEAF_RENEW_MS) return known.done
    const done = workers()
      .run({ caCertPem: this.ca.certPem, caKeyPem: this.ca.keyPem, host })
      .then(
        (leaf) => {
          this.ca.leafCerts.set(host, leaf)
          this.ca.secureContexts.delete(host)
        },
        (err: Error) => {
          // Not minted: the vendor's code mints it itself, on the event loop, and the next connection tries here again.
          this.minted.delete(host)
          throw err
        },
      )
    done.catch(() => undefined)
    this.minted.set(host, { at: Date.now(), done })
    return done
  }
}
