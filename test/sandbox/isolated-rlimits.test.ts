import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import t from 'tap'
import { createIsolatedSandbox } from '../../sandbox/isolated/sandbox.js'
import { isolatedOrSkip } from '../helpers/sandbox-backend.js'
import { text } from './_helpers.js'

/** Where the server may not create cgroups, rlimits hold the sandbox: the same tools work, a memory hog still fails. */
t.test('the isolated backend on rlimits alone', isolatedOrSkip(), async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'troupe-rlimits-'))
  const sb = createIsolatedSandbox(
    { workdir: dir },
    {
      limits: { memoryMib: 128, pids: 64, cpuSeconds: 5, files: 256, diskMib: 64 },
      cgroups: null,
      hostUid: process.geteuid?.() === 0 ? 65534 : null,
      egress: null,
    },
  )
  t.teardown(async () => {
    await sb.close()
    await rm(dir, { recursive: true, force: true })
  })
  const limits = await sb.run('bash', { command: 'ulimit -v; ulimit -t; echo hi > f.txt' })
  t.match(text(limits), /^131072\n5$/, 'address space 128 MiB, 5 CPU seconds')
  const read = await sb.run('read', { file_path: 'f.txt' })
  t.equal(read.is_error, false, 'the file tool server starts (node runs without the address-space limit)')
  t.match(text(read), /1\thi/)
  const hog = await sb.run('bash', { command: 'tail /dev/zero' })
  t.equal(hog.is_error, true)
  t.match(text(hog), /memory exhausted|Cannot allocate|Killed/)
  const spin = await sb.run('bash', { command: 'while :; do :; done' })
  t.match(
    text(spin),
    /CPU time limit exceeded|exit code 13[57]|shell exited with code 13[57]|Killed/,
    'a CPU hog dies at its CPU time (a loop in the shell itself takes the shell, which starts afresh)',
  )
  t.match(text(await sb.run('bash', { command: 'echo alive' })), /alive/)
})
