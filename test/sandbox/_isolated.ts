import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { Test } from 'tap'
import { openSandboxBackend, readSandboxSetting, type Sandbox, type SandboxBackend } from '../../sandbox/index.js'

/** The isolated backend as a server opens it, with `env` (TROUPE_SANDBOX_* settings) over this process's environment. */
export function isolatedBackend(env: Record<string, string> = {}): SandboxBackend {
  return openSandboxBackend(readSandboxSetting({ ...process.env, TROUPE_SANDBOX: 'isolated', ...env }))
}

/** A session's sandbox on `backend` in its own temp dir, closed and removed when the test ends. */
export async function isolatedSandbox(t: Test, backend: SandboxBackend, opts: { network?: boolean } = {}): Promise<{ sb: Sandbox; dir: string }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'troupe-isolated-test-'))
  const sb = backend.create({ workdir: dir, network: opts.network ? { type: 'unrestricted' } : undefined })
  t.teardown(async () => {
    await sb.close()
    await rm(dir, { recursive: true, force: true })
  })
  return { sb, dir }
}
