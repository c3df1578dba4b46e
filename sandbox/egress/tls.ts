import { existsSync, readFileSync } from 'node:fs'
import { rootCertificates } from 'node:tls'
// The vendor's runtime (pinned) makes and signs the certificates; its CA loader would write files we do not want (a
// trust bundle in a temporary directory), so the CA is assembled here from its pure parts, in memory only.
import { Leaves, newCa } from './leaves.js'
import { readUpstreamCa } from './upstream-ca.js'
import { generateEmptyCrl, type MitmCA, validateCaPair } from '@anthropic-ai/sandbox-runtime/dist/sandbox/mitm-ca.js'

/**
 * What the egress proxies of one server need to read HTTPS to the hosts a sandbox's secrets go to (secrets.ts): a CA
 * made when the first sandbox with a secret opens, its private key in this process's memory only (never written, never
 * inside a sandbox), which signs a certificate per host name the sandbox asks for; and what the proxy trusts when it
 * opens the real connection to that host (the real certificate is checked, always).
 */
export interface Interception {
  ca: MitmCA
  /** The CA's certificate (PEM): what a sandbox with secrets trusts, beside the system's roots. */
  caPem: string
  /** The system's trusted roots, then the CA: the bundle a sandbox with secrets sees at every usual place. */
  bundle: string
  /** Undefined: node's roots. Else those and the operator's extra roots (`TROUPE_SANDBOX_EGRESS_CA_FILE`). */
  upstreamCa: string[] | undefined
  /** Its leaf certificates, minted off the event loop before they are needed. */
  leaves: Leaves
}

/** Debian's bundle of the system's trusted certificates; node's own roots where there is none. */
const SYSTEM_CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt'

const made = new Map<string, Promise<Interception>>()

/**
 * The server's interception CA, made at the first call (an RSA key, on a worker thread: leaves.ts), then shared by
 * every sandbox of the process. `upstreamCaFile` (PEM certificates, upstream-ca.ts) is what the operator adds to the
 * roots the proxy checks real hosts against.
 */
export function interception(upstreamCaFile: string | undefined): Promise<Interception> {
  const key = upstreamCaFile ?? ''
  let known = made.get(key)
  if (!known) {
    known = make(upstreamCaFile)
    made.set(key, known)
    // A failure is not kept: the next sandbox tries again.
    known.catch(() => made.delete(key))
  }
  return known
}

async function make(upstreamCaFile: string | undefined): Promise<Interception> {
  const upstreamCa = upstreamCaFile ? [...rootCertificates, ...readUpstreamCa(upstreamCaFile)] : undefined
  const { certPem, keyPem } = await newCa()
  const v = validateCaPair(certPem, keyPem)
  if (!v.ok) throw new Error(`the egress CA made does not parse: ${v.reason}`)
  const ca: MitmCA = {
    certPath: '',
    keyPath: '',
    trustBundlePath: '',
    certPem,
    keyPem,
    cert: v.cert,
    key: v.key,
    leafCerts: new Map(),
    secureContexts: new Map(),
    crlDer: generateEmptyCrl(v.cert, keyPem),
    ephemeral: false,
  }
  const system = existsSync(SYSTEM_CA_BUNDLE) ? readFileSync(SYSTEM_CA_BUNDLE, 'utf8').trim() : rootCertificates.join('\n')
  return { ca, caPem: certPem, bundle: `${system}\n${certPem.trim()}\n`, upstreamCa, leaves: new Leaves(ca) }
}
