import { chmodSync, chownSync, existsSync, lstatSync, mkdirSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { isMemorySlug } from '../../protocol/memory-rules.js'
import { PACKAGES_PREFIX } from '../packages.js'
import { seccompFilter } from './seccomp.js'

/** Where things are inside every sandbox. */
export const INSIDE = {
  workspace: '/workspace',
  uploads: '/mnt/session/uploads',
  /** Read-only: the session's custom skills, one directory each (`<name>/SKILL.md` and its files). */
  skills: '/workspace/skills',
  outputs: '/mnt/session/outputs',
  /** The session's memory stores, one directory each (`<slug>/`), read-only or not as attached. */
  memory: '/mnt/memory',
  tmp: '/tmp',
  /** Read-only: the shell's command files and the file-tool server. */
  run: '/run/troupe',
  /** The session's own install prefix (packages.ts `PACKAGES_PREFIX`), writable. */
  packages: PACKAGES_PREFIX,
  /** Read-only: the directory of the egress proxy's socket (sandbox/egress/), in the shell's sandbox only. */
  egress: '/run/egress',
} as const

/** Where the shell's sandbox reaches its egress proxy: a forwarder inside listens here (launch.ts). */
export const PROXY_PORT = 3128

/** The egress proxy's socket, in its directory (bound at `INSIDE.egress`). */
export const EGRESS_SOCKET = 'proxy.sock'

/**
 * Beside the socket, for a sandbox with secrets (sandbox/egress/secrets.ts): the system's roots and the egress
 * proxy's CA (egress/tls.ts), which the sandbox trusts at every usual place (`insideEnv`, `bwrapArgs`).
 */
export const EGRESS_CA_BUNDLE = 'ca-certificates.crt'

/** The uid and gid the agent has inside (its host uid is another, see `hostUid`). */
export const INSIDE_UID = 1000

/** A session's host directories, all beneath its own directory. */
export interface SandboxDirs {
  root: string
  workspace: string
  uploads: string
  /** Bound read-only at /workspace/skills when the session has custom skills: their bundles, unpacked by the server. */
  skills: string
  /**
   * Where that bind lands on the host: `skills` beneath the workspace. The agent controls the workspace, so it is made
   * a real empty directory before each sandbox starts (`skillsMountPoint`).
   */
  skillsMountPoint: string
  /** Its memory stores, one directory each, materialised by the server (actors/workdir/memory/), each bound at /mnt/memory/<slug>. */
  memory: string
  outputs: string
  tmp: string
  /** Bound at /opt/packages: what the environment's package lists installed. */
  packages: string
  /** Bound read-only at /run/troupe: command files, the tool server, and etc/ (/etc/passwd and friends link there). */
  run: string
  etc: string
  /** The seccomp filter bwrap loads (seccomp.ts), outside every mount. */
  seccomp: string
}

/** The top-level name in the workspace where the session's skills are bound (`INSIDE.skills`). */
export const SKILLS_DIR = 'skills'

export function sandboxDirs(root: string): SandboxDirs {
  const d = (name: string) => path.join(root, name)
  return {
    root,
    workspace: d('workspace'),
    uploads: d('uploads'),
    skills: d('skills'),
    skillsMountPoint: path.join(root, 'workspace', SKILLS_DIR),
    memory: d('memory'),
    outputs: d('outputs'),
    tmp: d('tmp'),
    packages: d('packages'),
    run: d('.run'),
    etc: path.join(root, '.run', 'etc'),
    seccomp: path.join(root, '.seccomp.bpf'),
  }
}

/**
 * Creates the directories; the writable ones are handed to `hostUid` (the sandbox's own host uid when the server is
 * root), the read-only ones stay the server's, readable by all. Writes the seccomp filter bwrap loads unless `seccomp`
 * is false (default true).
 */
export function prepareDirs(dirs: SandboxDirs, hostUid: number | null, { seccomp = true } = {}): void {
  for (const dir of [dirs.root, dirs.uploads, dirs.run, dirs.etc]) {
    mkdirSync(dir, { recursive: true })
    chmodSync(dir, 0o755)
  }
  for (const dir of [dirs.workspace, dirs.outputs, dirs.tmp, dirs.packages]) {
    mkdirSync(dir, { recursive: true })
    if (hostUid !== null) chownSync(dir, hostUid, hostUid)
  }
  chmodSync(dirs.tmp, 0o1777)
  // Only the agent's own user: the host's user list (names, home directories) is none of its business.
  writeFileSync(
    path.join(dirs.etc, 'passwd'),
    `root:x:0:0::/:/usr/sbin/nologin\nagent:x:${INSIDE_UID}:${INSIDE_UID}:agent:/tmp:/bin/bash\nnobody:x:65534:65534::/:/usr/sbin/nologin\n`,
  )
  writeFileSync(path.join(dirs.etc, 'group'), `root:x:0:\nagent:x:${INSIDE_UID}:\nnogroup:x:65534:\n`)
  writeFileSync(path.join(dirs.etc, 'hosts'), '127.0.0.1 localhost\n::1 localhost\n')
  const filter = seccomp ? seccompFilter() : undefined
  if (filter) writeFileSync(dirs.seccomp, filter, { mode: 0o644 })
  else rmSync(dirs.seccomp, { force: true })
}

/**
 * Makes the skills' mount point, `workspace/skills`, a real empty directory (the server's) before a sandbox that binds
 * the skills starts: the agent controls the workspace and the server may be root, so anything else there (a link, a
 * file, a directory with things in it) is removed without following a link (lstat; rm removes a link, never its
 * target). Once a sandbox with the bind runs, the bind covers it in every view the agent has.
 */
export function prepareSkillsMountPoint(dirs: SandboxDirs): void {
  mkdirSync(dirs.skills, { recursive: true, mode: 0o755 })
  const p = dirs.skillsMountPoint
  const st = lstatSync(p, { throwIfNoEntry: false })
  if (st?.isDirectory() && readdirSync(p).length === 0) return
  if (st) rmSync(p, { recursive: true, force: true })
  mkdirSync(p, { mode: 0o755 })
}

/** One memory store's mount: its directory beneath `memory/` and /mnt/memory, and whether the sandbox may write it. */
export interface MemoryBind {
  slug: string
  readOnly: boolean
}

/**
 * Makes each memory mount's directory (the server's for a read-only one, `hostUid`'s for one the sandbox writes), so
 * that bwrap has something to bind even before the server's first pass. A slug is a single safe name (protocol's
 * memory rules), never a path: anything else is refused.
 */
export function prepareMemoryDirs(dirs: SandboxDirs, memory: readonly MemoryBind[], hostUid: number | null): void {
  mkdirSync(dirs.memory, { recursive: true, mode: 0o755 })
  chmodSync(dirs.memory, 0o755)
  for (const m of memory) {
    if (!isMemorySlug(m.slug)) throw new Error(`${JSON.stringify(m.slug)} is not a memory mount's name`)
    const dir = path.join(dirs.memory, m.slug)
    mkdirSync(dir, { recursive: true, mode: 0o755 })
    if (!m.readOnly && hostUid !== null) chownSync(dir, hostUid, hostUid)
  }
}

/**
 * Host files under /etc the toolset needs (dynamic linker cache, `alternatives` links, certificates, time zone, and
 * apt's sources, for apt package lists).
 */
const ETC_READ_ONLY = ['apt', 'ld.so.cache', 'ld.so.conf', 'ld.so.conf.d', 'alternatives', 'ssl', 'ca-certificates', 'localtime', 'nsswitch.conf', 'mime.types']

/** Files of /etc made for the sandbox (in `SandboxDirs.etc`), linked from /etc. */
const ETC_GENERATED = ['passwd', 'group', 'hosts']

/** The top-level names that merged-/usr systems link into /usr (or that hold libraries on the others). */
const ROOT_LINKS = ['bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32']

/** A session directory mounted into the sandbox. */
export interface SessionMount {
  source: string
  dest: string
  readOnly: boolean
}

/**
 * The session's own directories, as they appear inside; its skills when it has some (bound after /workspace, which
 * holds their mount point); its memory stores, each at /mnt/memory/<slug> (read-only as attached); and the egress
 * proxy's socket directory when it has one.
 */
export function sessionMounts(dirs: SandboxDirs, o: { egressDir?: string; skills?: boolean; memory?: readonly MemoryBind[] } = {}): SessionMount[] {
  const mounts: SessionMount[] = [
    { source: dirs.tmp, dest: INSIDE.tmp, readOnly: false },
    { source: dirs.workspace, dest: INSIDE.workspace, readOnly: false },
  ]
  if (o.skills) mounts.push({ source: dirs.skills, dest: INSIDE.skills, readOnly: true })
  mounts.push(
    { source: dirs.uploads, dest: INSIDE.uploads, readOnly: true },
    { source: dirs.outputs, dest: INSIDE.outputs, readOnly: false },
    { source: dirs.packages, dest: INSIDE.packages, readOnly: false },
    { source: dirs.run, dest: INSIDE.run, readOnly: true },
  )
  for (const m of o.memory ?? []) {
    if (!isMemorySlug(m.slug)) throw new Error(`${JSON.stringify(m.slug)} is not a memory mount's name`)
    mounts.push({ source: path.join(dirs.memory, m.slug), dest: `${INSIDE.memory}/${m.slug}`, readOnly: m.readOnly })
  }
  if (o.egressDir) mounts.push({ source: o.egressDir, dest: INSIDE.egress, readOnly: true })
  return mounts
}

/**
 * bwrap options for one sandbox: every namespace new (user, mount, PID, IPC, UTS, network, cgroup), nested user
 * namespaces refused, no capabilities, uid/gid 1000 inside, dies with its parent, `env` its whole environment. The filesystem is built from
 * nothing: /usr and a few /etc files read-only, fresh /proc and /dev, the session's directories, nothing else of the
 * host (not its other files, not the data directory, not the server's checkout). `mounts` are the session's
 * directories, each `source` a path bwrap can reach (launch.ts stages them when bwrap cannot reach the data dir).
 */
export function bwrapArgs(mounts: readonly SessionMount[], env: Record<string, string>, extraReadOnly: readonly string[] = [], caBundle?: string): string[] {
  const args = ['--unshare-all', '--unshare-user', '--disable-userns', '--die-with-parent', '--hostname', 'sandbox']
  // Whatever the spawning process's environment held (a test runner's NODE_OPTIONS, a secret) stays outside.
  args.push('--clearenv')
  for (const [k, v] of Object.entries(env)) args.push('--setenv', k, v)
  args.push('--uid', String(INSIDE_UID), '--gid', String(INSIDE_UID), '--cap-drop', 'ALL')
  args.push('--ro-bind', '/usr', '/usr')
  for (const name of ROOT_LINKS) {
    const host = `/${name}`
    if (!existsSync(host)) continue
    if (lstatSync(host).isSymbolicLink()) args.push('--symlink', readlinkSync(host), host)
    else args.push('--ro-bind', host, host)
  }
  args.push('--dir', '/etc')
  for (const name of ETC_READ_ONLY) args.push('--ro-bind-try', `/etc/${name}`, `/etc/${name}`)
  for (const name of ETC_GENERATED) args.push('--symlink', path.posix.join(INSIDE.run, 'etc', name), `/etc/${name}`)
  for (const p of extraReadOnly) args.push('--ro-bind', p, p)
  // apt package lists need to know what the host has installed (packages.ts), so they fetch only what is missing.
  args.push('--ro-bind-try', '/var/lib/dpkg', '/var/lib/dpkg')
  args.push('--proc', '/proc', '--dev', '/dev')
  for (const m of mounts) args.push(m.readOnly ? '--ro-bind' : '--bind', m.source, m.dest)
  // Over the system's bundle too, for the programs that read only it (curl, openssl, apt, git without variables); a
  // link there (some distributions) may point outside what is bound, so only a file is covered.
  if (caBundle && lstatSync(SYSTEM_CA_BUNDLE, { throwIfNoEntry: false })?.isFile()) args.push('--ro-bind', caBundle, SYSTEM_CA_BUNDLE)
  args.push('--chdir', INSIDE.workspace)
  return args
}

/** Debian's bundle of the system's trusted certificates (bound read-only with /etc/ssl). */
const SYSTEM_CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt'

/** Debian's multiarch library directory name for this machine. */
const MULTIARCH = `${process.arch === 'arm64' ? 'aarch64' : 'x86_64'}-linux-gnu`

/**
 * The environment inside: nothing of the server's own. With `egress`, the proxy variables every common client reads
 * (curl, pip, npm, apt, cargo, go, gem), in both spellings; the sandbox itself stays reachable directly. With
 * `trustEgressCa` (a sandbox with secrets), every client's certificate bundle variable names the bundle holding the
 * egress proxy's CA (`EGRESS_CA_BUNDLE`).
 */
export function insideEnv(egress = false, trustEgressCa = false): Record<string, string> {
  const p = INSIDE.packages
  const env: Record<string, string> = {
    // What the environment's packages installed comes first (packages.ts): their binaries, Python and Node modules,
    // gems, and the libraries of unpacked apt packages.
    PATH: `${p}/bin:${p}/python/bin:${p}/apt/usr/bin:${p}/apt/bin:/usr/local/bin:/usr/bin:/bin`,
    NODE_PATH: `${p}/lib/node_modules`,
    PYTHONPATH: `${p}/python`,
    GEM_HOME: `${p}/gems`,
    GOBIN: `${p}/bin`,
    LD_LIBRARY_PATH: `${p}/apt/usr/lib/${MULTIARCH}:${p}/apt/usr/lib:${p}/apt/lib/${MULTIARCH}`,
    HOME: INSIDE.tmp,
    PWD: INSIDE.workspace,
    USER: 'agent',
    LOGNAME: 'agent',
    SHELL: '/bin/bash',
    LANG: 'C.UTF-8',
    TMPDIR: INSIDE.tmp,
  }
  // Node and pip carry their own certificate bundles; inside they trust what the host's system trusts (an
  // intercepting corporate proxy's CA included), as curl, apt and git do.
  if (existsSync(SYSTEM_CA_BUNDLE)) env.NODE_EXTRA_CA_CERTS = env.REQUESTS_CA_BUNDLE = SYSTEM_CA_BUNDLE
  if (egress) {
    const proxy = `http://127.0.0.1:${PROXY_PORT}`
    for (const name of ['http_proxy', 'https_proxy', 'HTTP_PROXY', 'HTTPS_PROXY']) env[name] = proxy
    env.no_proxy = env.NO_PROXY = 'localhost,127.0.0.1,::1'
  }
  if (egress && trustEgressCa) {
    const bundle = `${INSIDE.egress}/${EGRESS_CA_BUNDLE}`
    for (const name of ['SSL_CERT_FILE', 'CURL_CA_BUNDLE', 'REQUESTS_CA_BUNDLE', 'NODE_EXTRA_CA_CERTS', 'GIT_SSL_CAINFO', 'PIP_CERT']) env[name] = bundle
  }
  return env
}
