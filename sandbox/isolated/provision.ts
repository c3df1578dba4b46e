import { spawn } from 'node:child_process'
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { type EgressPolicy, PACKAGE_REGISTRY_HOSTS, widened } from '../egress/policy.js'
import type { EgressProxy } from '../egress/proxy.js'
import { signalQuietly } from '../host/proc.js'
import { installScript, listedManagers, type PackageLists, type Provisioned, packagesDigest } from '../packages.js'
import { egressDirectory } from './egress-dirs.js'
import { LAUNCH_ENV, type LaunchContext, sandboxed, withForwarder } from './launch.js'
import { EGRESS_SOCKET } from './layout.js'

/** An installation still running after this long is killed and reported as failed. */
export const INSTALL_TIMEOUT_MS = 15 * 60_000
/** The tail of the installers' output a failure reports. */
const OUTPUT_KEPT = 4_000

export interface ProvisionContext {
  /** The shell's launch context: the same mounts, limits and uid (its egress directory is replaced). */
  ctx: LaunchContext
  /** Where the digest of what was installed is kept on the host (outside every mount: the agent cannot forge it). */
  marker: string
  /** The sandbox's final policy; null: this host's sandboxes have no network. */
  policy: EgressPolicy | null
  openProxy(socket: string, policy: EgressPolicy): Promise<EgressProxy>
}

/**
 * Installs an environment's packages into the session's /opt/packages (SPEC environments rules 10, 11), once per
 * session directory: a digest of the lists on the host says it was done, so a retry after a failure, or a new host
 * after a move (whose directory is new), installs again from the stored lists. The installers run in a sandbox of
 * their own with a proxy of their own whose policy is the final one widened by the canonical registries: the
 * session's shell never sees the wider policy, and nothing runs with it once the installation ends.
 */
export async function provision(p: ProvisionContext, packages: PackageLists, signal?: AbortSignal): Promise<Provisioned> {
  if (listedManagers(packages).length === 0) return { ok: true }
  const digest = packagesDigest(packages)
  if (readMarker(p.marker) === digest) return { ok: true }
  if (!p.policy) return { ok: false, message: 'packages need the network, and this host’s sandboxes have none (socat is not installed)' }
  const full = p.ctx.limits.admit()
  if (full) return { ok: false, message: `packages were not installed: ${full}` }
  const dir = egressDirectory()
  let proxy: EgressProxy | undefined
  try {
    proxy = await p.openProxy(path.join(dir, EGRESS_SOCKET), widened(p.policy, PACKAGE_REGISTRY_HOSTS))
    const program = sandboxed({ ...p.ctx, egressDir: dir }, withForwarder(['/bin/bash', '-c', installScript(packages)]))
    const r = await runToEnd(program.file, program.args, p.ctx.dirs.root, signal)
    if (r.ending === 'aborted') return { ok: false, message: 'package installation was interrupted' }
    if (r.ending === 'timeout') return { ok: false, message: `package installation took longer than ${INSTALL_TIMEOUT_MS / 60_000} minutes:\n${r.output}` }
    if (r.code !== 0) return { ok: false, message: `package installation failed (exit ${r.code}):\n${r.output}` }
    writeFileSync(p.marker, digest)
    return { ok: true }
  } catch (err) {
    return { ok: false, message: `package installation could not start: ${(err as Error).message}` }
  } finally {
    await proxy?.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

function readMarker(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8')
  } catch {
    return undefined
  }
}

interface RunEnd {
  ending: 'exited' | 'aborted' | 'timeout'
  code: number | null
  /** The last OUTPUT_KEPT characters of stdout and stderr together. */
  output: string
}

/** Runs a sandboxed program to its end; aborting or timing out SIGKILLs bwrap, which ends its whole namespace. */
function runToEnd(file: string, args: string[], cwd: string, signal?: AbortSignal): Promise<RunEnd> {
  return new Promise((resolve) => {
    let output = ''
    let ending: RunEnd['ending'] = 'exited'
    const child = spawn(file, args, { cwd, env: LAUNCH_ENV, stdio: ['ignore', 'pipe', 'pipe'] })
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString('utf8')).slice(-OUTPUT_KEPT)
    }
    child.stdout.on('data', keep)
    child.stderr.on('data', keep)
    const kill = (why: RunEnd['ending']) => {
      ending = why
      if (child.pid) signalQuietly(child.pid, 'SIGKILL')
    }
    const timer = setTimeout(() => kill('timeout'), INSTALL_TIMEOUT_MS)
    const onAbort = () => kill('aborted')
    signal?.addEventListener('abort', onAbort, { once: true })
    if (signal?.aborted) onAbort()
    child.on('error', (err) => keep(Buffer.from(`\n${err.message}`)))
    child.on('close', (code) => {
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
      resolve({ ending, code, output: output.trim() })
    })
  })
}
