import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import t from 'tap'
import { openSandboxBackend, readSandboxSetting } from '../../sandbox/index.js'
import { isolatedOrSkip } from '../helpers/sandbox-backend.js'

t.test('TROUPE_SANDBOX takes isolated or local; anything else stops start-up naming it', async (t) => {
  t.throws(() => readSandboxSetting({ TROUPE_SANDBOX: 'docker' }), /TROUPE_SANDBOX must be isolated or local \(was "docker"\)/)
  t.equal(readSandboxSetting({ TROUPE_SANDBOX: 'local' }).kind, 'local')
  t.equal(readSandboxSetting({ TROUPE_SANDBOX: ' ' }).kind, undefined, 'blank: the default')
})

t.test('limits: defaults, and bad values refused naming the setting and the rule', async (t) => {
  t.same(readSandboxSetting({}).limits, { memoryMib: 2048, pids: 256, cpuSeconds: 3600, files: 1024, diskMib: 4096 })
  t.equal(readSandboxSetting({}).hostUid, 65534)
  t.same(readSandboxSetting({ TROUPE_SANDBOX_MEMORY_MIB: '512', TROUPE_SANDBOX_PIDS: '100', TROUPE_SANDBOX_CPU_SECONDS: '60' }).limits, {
    memoryMib: 512,
    pids: 100,
    cpuSeconds: 60,
    files: 1024,
    diskMib: 4096,
  })
  t.throws(() => readSandboxSetting({ TROUPE_SANDBOX_MEMORY_MIB: '10' }), /TROUPE_SANDBOX_MEMORY_MIB must be an integer of at least 64 \(was "10"\)/)
  t.throws(() => readSandboxSetting({ TROUPE_SANDBOX_PIDS: 'many' }), /TROUPE_SANDBOX_PIDS must be an integer of at least 16/)
  t.throws(() => readSandboxSetting({ TROUPE_SANDBOX_UID: '0' }), /TROUPE_SANDBOX_UID must be an integer of at least 1/)
})

t.test('TROUPE_SANDBOX_EGRESS_ALLOW takes addresses and ranges with optional ports; anything else stops start-up', async (t) => {
  t.same(readSandboxSetting({}).egress.allowAddresses, [])
  t.same(readSandboxSetting({ TROUPE_SANDBOX_EGRESS_ALLOW: ' 127.0.0.1:8080, 10.0.0.0/8,[::1]:9000 ,fd00::/8 ' }).egress.allowAddresses, [
    '127.0.0.1:8080',
    '10.0.0.0/8',
    '[::1]:9000',
    'fd00::/8',
  ])
  for (const bad of ['localhost', 'example.com:80', '10.0.0.0/x', '300.1.1.1']) {
    t.throws(() => readSandboxSetting({ TROUPE_SANDBOX_EGRESS_ALLOW: bad }), /TROUPE_SANDBOX_EGRESS_ALLOW: .* is not an address or CIDR range/, bad)
  }
})

t.test('local is taken as asked, saying it isolates nothing', async (t) => {
  const b = openSandboxBackend(readSandboxSetting({ TROUPE_SANDBOX: 'local' }))
  t.equal(b.kind, 'local')
  t.match(b.why, /no isolation/)
})

t.test('the default is isolated where a probe sandbox starts, and says what it gives', async (t) => {
  const gate = isolatedOrSkip()
  if (gate.skip) {
    const b = openSandboxBackend(readSandboxSetting({}))
    t.equal(b.kind, 'local')
    t.match(b.why, /isolated sandbox unavailable \(.+\)/, 'the fallback says why')
    return
  }
  const b = openSandboxBackend(readSandboxSetting({}))
  t.equal(b.kind, 'isolated')
  t.match(
    b.why,
    /^bubblewrap starts here: one bubblewrap sandbox per session, .*network only through an egress proxy per session, never to this host’s own services, at most 256 connections each \(TROUPE_SANDBOX_CONNECTIONS\).*; memory 2048 MiB, 256 processes/,
  )
  t.match(b.why, /1024 open files per process/)
  t.match(b.why, /disk 4096 MiB/)
  t.match(b.why, /seccomp filter \(io_uring/)
})

t.test('the new limits are read from their settings, and bad values stop start-up naming them', async (t) => {
  const s = readSandboxSetting({
    TROUPE_SANDBOX_FILES: '512',
    TROUPE_SANDBOX_DISK_MIB: '100',
    TROUPE_SANDBOXES_MEMORY_MIB: '4096',
    TROUPE_SANDBOXES_PIDS: '2000',
    TROUPE_SANDBOX_CONNECTIONS: '32',
    TROUPE_FD_RESERVE: '2048',
  })
  t.match(s.limits, { files: 512, diskMib: 100 })
  t.same(s.budget, { memoryMib: 4096, pids: 2000 })
  t.match(s.egress, { connections: 32, descriptorReserve: 2048 })
  const d = readSandboxSetting({})
  t.ok(d.budget.memoryMib > 0 && d.budget.pids > 0, 'defaults from the machine')
  t.equal(d.egress.descriptorReserve, undefined, 'the reserve is worked out from the limit in force')
  for (const [name, value] of [
    ['TROUPE_SANDBOX_DISK_MIB', '0'],
    ['TROUPE_SANDBOXES_PIDS', 'lots'],
    ['TROUPE_SANDBOXES_PIDS', '47'],
    ['TROUPE_SANDBOXES_MEMORY_MIB', '255'],
    ['TROUPE_SANDBOX_CONNECTIONS', '-1'],
    ['TROUPE_FD_RESERVE', '10'],
    ['TROUPE_SANDBOX_FILES', '1.5'],
  ] as const) {
    t.throws(() => readSandboxSetting({ [name]: value }), new RegExp(`${name} must be an integer of at least`), `${name}=${value}`)
  }
})

t.test("the egress directories of a server that died are removed when the next isolated backend opens; a live one's stay", isolatedOrSkip(), async (t) => {
  const dead = spawnSync('true').pid!
  const deadDir = path.join(tmpdir(), `troupe-egress-pid${dead}`)
  const liveDir = path.join(tmpdir(), `troupe-egress-pid${process.ppid}`)
  for (const d of [deadDir, liveDir]) mkdirSync(path.join(d, 'sabc'), { recursive: true })
  t.teardown(() => rmSync(liveDir, { recursive: true, force: true }))
  openSandboxBackend(readSandboxSetting({}))
  t.notOk(existsSync(deadDir), 'the dead server’s directory is gone')
  t.ok(existsSync(liveDir), 'a running process’s stays')
})
