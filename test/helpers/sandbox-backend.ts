import { readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { openSandboxBackend, readSandboxSetting, type SandboxKind } from '../../sandbox/index.js'

let kind: SandboxKind | undefined

/** The backend a server started with this process's environment runs: probed the way the server probes. */
export function expectedSandbox(): SandboxKind {
  kind ??= openSandboxBackend(readSandboxSetting(process.env)).kind
  return kind
}

/** A session's working directory on the host (where the test reads its files) and as its tools see it (`pwd`). */
export function sessionWorkdir(dataDir: string, sessionId: string): { host: string; inside: string } {
  const root = path.join(dataDir, 'sessions', sessionId)
  if (expectedSandbox() === 'local') return { host: root, inside: root }
  return { host: path.join(root, 'workspace'), inside: '/workspace' }
}

/**
 * Whether the isolated backend's own tests can run here. Where it cannot start they skip and say so, unless
 * `TROUPE_REQUIRE_ISOLATED=1` (CI and our machines, where bwrap works): then that is a failure.
 */
export function isolatedOrSkip(): { skip: string | false } {
  if (openSandboxBackend(readSandboxSetting({ ...process.env, TROUPE_SANDBOX: '' })).kind === 'isolated') return { skip: false }
  if (process.env.TROUPE_REQUIRE_ISOLATED === '1') throw new Error('the isolated sandbox cannot start here, and TROUPE_REQUIRE_ISOLATED=1')
  return { skip: 'the isolated sandbox (bubblewrap) cannot start on this machine' }
}

/**
 * A directory a session's bash and the test both see: the host's temp dir on the local backend; on the isolated one
 * the sandbox's /tmp, which is `<data dir>/sessions/<id>/tmp` of the server (pid `serverPid`) running the session.
 */
export function sharedTmp(serverPid: number, sessionId: string): { host: string; inside: string } {
  if (expectedSandbox() === 'local') return { host: tmpdir(), inside: tmpdir() }
  const environ = readFileSync(`/proc/${serverPid}/environ`, 'utf8').split('\0')
  const dataDir = environ.find((v) => v.startsWith('TROUPE_DATA_DIR='))?.slice('TROUPE_DATA_DIR='.length)
  if (!dataDir) throw new Error(`server ${serverPid} has no TROUPE_DATA_DIR`)
  return { host: path.join(dataDir, 'sessions', sessionId, 'tmp'), inside: '/tmp' }
}
