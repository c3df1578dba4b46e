import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { Test } from 'tap'
import { createHostSandbox, type Sandbox, type SandboxOptions, type ToolResult } from '../../sandbox/index.js'

/** A sandbox in its own temp dir, closed and removed when the test ends. */
export async function sandboxFor(t: Test, opts: Partial<SandboxOptions> = {}): Promise<{ sb: Sandbox; dir: string }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'troupe-sandbox-test-'))
  const sb = createHostSandbox({ workdir: dir, ...opts })
  t.teardown(async () => {
    await sb.close()
    await rm(dir, { recursive: true, force: true })
  })
  return { sb, dir }
}

export function text(r: ToolResult): string {
  return r.content.map((c) => c.text).join('')
}

/** True once `pid` no longer exists (zombies are reaped by init shortly after their parent dies). */
export async function gone(pid: number, withinMs = 10_000): Promise<boolean> {
  const deadline = Date.now() + withinMs
  while (Date.now() < deadline) {
    try {
      process.kill(pid, 0)
    } catch {
      return true
    }
    await new Promise((r) => setTimeout(r, 50))
  }
  return false
}
