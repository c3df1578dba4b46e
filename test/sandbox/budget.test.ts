import { readFileSync } from 'node:fs'
import t from 'tap'
import { isolatedOrSkip } from '../helpers/sandbox-backend.js'
import { isolatedBackend, isolatedSandbox } from './_isolated.js'
import { text } from './_helpers.js'

/**
 * The host's budget for all its sandboxes together (TROUPE_SANDBOXES_PIDS, TROUPE_SANDBOXES_MEMORY_MIB): the kernel
 * holds them to it in one parent cgroup, and a sandbox that would start while it is nearly spent is refused with an
 * error naming the setting; it starts once the others give back.
 */

const gate = isolatedOrSkip()
if (gate.skip) t.test('sandboxes budget', { skip: gate.skip }, () => {})
else await suite()

async function suite() {
  const cgroups = isolatedBackend().why.includes('all sandboxes together')
  const skip = cgroups ? false : 'cgroups are not writable here: no budget for all sandboxes together'

  t.test('processes: a new sandbox is refused while the others hold nearly all', { skip }, async (t) => {
    const backend = isolatedBackend({ TROUPE_SANDBOXES_PIDS: '64', TROUPE_SANDBOX_PIDS: '64' })
    t.match(backend.why, /all sandboxes together \d+ MiB and 64 processes/, 'the start-up line names the budget')
    const a = await isolatedSandbox(t, backend)
    const b = await isolatedSandbox(t, backend)
    t.match(text(await a.sb.run('bash', { command: 'for i in $(seq 40); do sleep 300 & done; echo started' })), /started/)
    const refused = await b.sb.run('bash', { command: 'echo hi' })
    t.equal(refused.is_error, true)
    t.match(
      text(refused),
      /the host's sandbox budget is full: its sandboxes run \d+ of the 64 processes and threads they may have together \(TROUPE_SANDBOXES_PIDS\)/,
    )
    t.match(text(refused), /The tool did not run/)
    // perl's fork fails at once where bash's retries for a while.
    const forks = `perl -e 'for (1..30) { my $p = fork; if (!defined $p) { print "fork failed: $!\\n"; exit } if ($p == 0) { sleep 300; exit } } print "all forked\\n"'`
    const more = await a.sb.run('bash', { command: forks })
    t.match(text(more), /fork failed: Resource temporarily unavailable/, 'the kernel holds a running sandbox to the budget too')
    const parent = `/sys/fs/cgroup/pids/troupe-${process.pid}/pids.current`
    t.ok(Number(readFileSync(parent, 'utf8')) <= 64, 'never past it')
    await a.sb.close()
    t.match(text(await b.sb.run('bash', { command: 'echo hi' })), /^hi$/, 'once they are gone, the sandbox starts')
  })

  t.test('memory: a new sandbox is refused while the others use nearly all', { skip }, async (t) => {
    const backend = isolatedBackend({ TROUPE_SANDBOXES_MEMORY_MIB: '320' })
    const a = await isolatedSandbox(t, backend)
    const b = await isolatedSandbox(t, backend)
    const hold = 'python3 -c "import time; b = bytearray(240 << 20); print(\'held\', flush=True); time.sleep(300)" > /tmp/held 2>&1 &'
    await a.sb.run('bash', { command: `${hold} for i in $(seq 100); do grep -q held /tmp/held && break; sleep 0.1; done; cat /tmp/held` })
    const refused = await b.sb.run('bash', { command: 'echo hi' })
    t.equal(refused.is_error, true)
    t.match(
      text(refused),
      /the host's sandbox budget is full: its sandboxes use \d+ of the 320 MiB of memory they may have together \(TROUPE_SANDBOXES_MEMORY_MIB\)/,
    )
    await a.sb.run('bash', { command: 'kill $(jobs -p); wait 2>/dev/null; echo stopped' })
    t.match(text(await b.sb.run('bash', { command: 'echo hi' })), /^hi$/, 'once it is given back, the sandbox starts')
  })
}
