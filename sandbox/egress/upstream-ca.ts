import { readFileSync } from 'node:fs'

/**
 * The certificates of `TROUPE_SANDBOX_EGRESS_CA_FILE` (PEM), which the egress proxy trusts beside node's roots when it
 * opens the real HTTPS connection of a request it put a secret into. Throws, naming the file, when it cannot be read
 * or holds no certificate: checked at start-up (backend.ts), so a bad setting stops the server there.
 */
export function readUpstreamCa(file: string): string[] {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    throw new Error(`TROUPE_SANDBOX_EGRESS_CA_FILE: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? err})`)
  }
  const certs = text.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g)
  if (!certs) throw new Error(`TROUPE_SANDBOX_EGRESS_CA_FILE: ${file} holds no PEM certificate`)
  return certs
}
