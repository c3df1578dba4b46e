/**
 * A session's host directory and its sandbox (`<data dir>/sessions/<id>`): the tools' sandbox, in this process or on
 * a sandbox host, the files and skills mounted into it, its workspace saved and restored across moves, its outputs
 * published as Files. The session actor holds one through the port (`SessionSandbox`, port.ts) that `Workdirs.bind`
 * gives; `troupe sandbox` runs `SandboxHost`, the other side of the remote binding. Nothing here imports the session
 * kind.
 *
 * Reading order: port.ts (what the session asks), workdirs.ts (in-process or remote), in-process.ts (prepare, run, save),
 * then mounts.ts, skills/, workspace/, outputs/ for each thing prepare and a tool run do; remote-sandbox.ts,
 * sandbox-wire.ts and sandbox-host.ts for the remote binding.
 */
export type { Prepared, SandboxOwner, SandboxSpec, SecretSource, SessionSandbox } from './port.js'
export { DEFAULT_WORKDIR_SETTINGS, type WorkdirDeps, workdirDeps, type WorkdirSettings } from './deps.js'
export { type SandboxHosts, Workdirs } from './workdirs.js'
export { sandboxSpec } from './spec.js'
export { sessionDir } from './mounts.js'
export type { SkillMount } from './skills/index.js'
export { SandboxHost, sandboxHostDeps } from './sandbox-host.js'
export { SecretsKey } from './sealed-secrets.js'
