import { spawn } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import Anthropic from '@anthropic-ai/sdk'
import { asUserRuns } from '../helpers/troupe.js'

const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bin/troupe.mjs')

export interface CliResult {
  code: number | null
  stdout: string
  stderr: string
}

/** `troupe <args>` as an operator runs it, with NATS_URL set; bounded, so a hang fails the test rather than stalls it. */
export function troupeCli(natsUrl: string, args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  const full = { ...process.env, NATS_URL: natsUrl, ...env } as NodeJS.ProcessEnv
  const [cmd, ...argv] = asUserRuns([process.execPath, BIN, ...args], full)
  const proc = spawn(cmd!, argv, { env: full, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  proc.stdout.on('data', (d) => (stdout += d))
  proc.stderr.on('data', (d) => (stderr += d))
  const timer = setTimeout(() => proc.kill('SIGKILL'), 30_000)
  return new Promise((resolve) =>
    proc.once('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    }),
  )
}

/** A key made with `troupe keys create … --json`: its record, with the key shown this once. */
export async function createKey(natsUrl: string, args: string[]): Promise<{ id: string; key: string; expires_at: string | null; [k: string]: unknown }> {
  const r = await troupeCli(natsUrl, ['keys', 'create', ...args, '--json'])
  if (r.code !== 0) throw new Error(`troupe keys create ${args.join(' ')} exited ${r.code}: ${r.stderr}`)
  return JSON.parse(r.stdout.trim())
}

/** The official client with an API key (sent as x-api-key), retries as asked (none by default). */
export const clientWith = (url: string, apiKey: string, maxRetries = 0) => new Anthropic({ baseURL: url, apiKey, maxRetries })

/** The status an official client call failed with, or 200 when it succeeded. */
export async function statusOf(call: Promise<unknown>): Promise<number> {
  try {
    await call
    return 200
  } catch (err) {
    if (err instanceof Anthropic.APIError && typeof err.status === 'number') return err.status
    throw err
  }
}
