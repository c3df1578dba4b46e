// A worker thread of leaves.ts: makes the interception CA and mints leaf certificates with the vendor runtime's own
// code, whose RSA key generation is synchronous (55–130 ms each on a 2-core machine), off the server's event loop.
import { generateCa, type MitmCA, validateCaPair } from '@anthropic-ai/sandbox-runtime/dist/sandbox/mitm-ca.js'
import { mintLeafCert } from '@anthropic-ai/sandbox-runtime/dist/sandbox/mitm-leaf.js'

/** A new CA (`ca`), or a leaf for `host` signed by the CA given. */
export type LeafTask = { ca: true } | { caCertPem: string; caKeyPem: string; host: string }

/** A certificate (PEM; a leaf's followed by its CA's) and its private key (PEM). */
export interface Leaf {
  certPem: string
  keyPem: string
}

/** The CA as last parsed: a process has one (tls.ts), so it is parsed once per worker. */
let parsed: { pem: string; ca: MitmCA } | undefined

export default function mint(task: LeafTask): Leaf {
  if ('ca' in task) {
    const { certPem, keyPem } = generateCa({ cn: 'Troupe sandbox egress CA' })
    return { certPem, keyPem }
  }
  if (parsed?.pem !== task.caCertPem) {
    const v = validateCaPair(task.caCertPem, task.caKeyPem)
    if (!v.ok) throw new Error(`the egress CA does not parse: ${v.reason}`)
    const ca = {
      certPath: '',
      keyPath: '',
      trustBundlePath: '',
      certPem: task.caCertPem,
      keyPem: task.caKeyPem,
      cert: v.cert,
      key: v.key,
      leafCerts: new Map(),
      secureContexts: new Map(),
      crlDer: Buffer.alloc(0),
      ephemeral: false,
    } as MitmCA
    parsed = { pem: task.caCertPem, ca }
  }
  const { certPem, keyPem } = mintLeafCert(parsed.ca, task.host)
  // Minted once per host by the caller: nothing is kept here.
  parsed.ca.leafCerts.delete(task.host)
  return { certPem, keyPem }
}
