import t from 'tap'
import { DENIED_SYSCALLS } from '../../sandbox/isolated/seccomp.js'
import { isolatedOrSkip } from '../helpers/sandbox-backend.js'
import { isolatedBackend, isolatedSandbox } from './_isolated.js'
import { text } from './_helpers.js'

/**
 * What a sandbox's code cannot reach of the kernel and of the host (issue: a sandbox cannot starve the host): the
 * seccomp filter's refusals (tried with perl's `syscall`, which needs no compiler), no typing into the shell's
 * terminal (TIOCSTI), the file tools without a terminal at all (bwrap --new-session), and no host path in any
 * process's environment inside.
 */

const gate = isolatedOrSkip()
if (gate.skip) t.test('sandbox hardening', { skip: gate.skip }, () => {})
else await suite()

async function suite() {
  const backend = isolatedBackend()

  t.test('the seccomp filter refuses what agents never need, and the rest works', async (t) => {
    t.match(backend.why, /seccomp filter \(io_uring/, 'the start-up line names the filter')
    for (const name of ['io_uring_setup', 'keyctl', 'bpf', 'perf_event_open', 'userfaultfd', 'mount', 'unshare', 'kexec_load', 'init_module']) {
      t.ok(DENIED_SYSCALLS.includes(name), `${name} is denied`)
    }
    const { sb } = await isolatedSandbox(t, backend)
    // x86-64 numbers, aarch64 in parentheses where they differ: io_uring_setup 425, keyctl 250 (219), bpf 321 (280),
    // userfaultfd 323 (282), unshare 272 (97).
    const arm = process.arch === 'arm64'
    const calls = { io_uring_setup: 425, keyctl: arm ? 219 : 250, bpf: arm ? 280 : 321, userfaultfd: arm ? 282 : 323, unshare: arm ? 97 : 272 }
    const script = Object.entries(calls)
      .map(
        ([name, nr]) =>
          `$! = 0; my $${name} = syscall(${nr}, ${name === 'io_uring_setup' ? '8, $p' : name === 'unshare' ? '0x20000' : '0, 0, 0'}); print "${name}=$${name} $!\\n";`,
      )
      .join(' ')
    const r = await sb.run('bash', { command: `perl -e 'my $p = "\\0" x 120; ${script}'` })
    const out = text(r)
    for (const name of Object.keys(calls)) t.match(out, new RegExp(`${name}=-1 Operation not permitted`), `${name}: EPERM`)
    const ok = await sb.run('bash', {
      command: 'python3 -c "import os, threading; t = threading.Thread(target=print, args=(os.getpid(),)); t.start(); t.join()" && echo ran',
    })
    t.match(text(ok), /ran/, 'ordinary programs (threads, python) run under it')
    const read = await sb.run('write', { file_path: '/workspace/a.txt', content: 'node too' })
    t.equal(read.is_error, false, 'the file tools (node, libuv) run under it')
  })

  t.test("nothing in the sandbox can type into the shell's terminal", async (t) => {
    const { sb } = await isolatedSandbox(t, backend)
    const inject = `perl -e 'open(my $t, "+<", "/dev/tty") or die "no tty: $!"; my $c = "e"; print ioctl($t, 0x5412, $c) ? "typed\\n" : "refused: $!\\n"'`
    const r = await sb.run('bash', { command: inject })
    t.match(text(r), /refused: Operation not permitted/, 'TIOCSTI is refused')
    t.match(text(await sb.run('bash', { command: 'echo next' })), /^next$/, 'the shell goes on untouched')
  })

  t.test('the file tools run without a controlling terminal (bwrap --new-session)', async (t) => {
    const { sb } = await isolatedSandbox(t, backend)
    const r = await sb.run('read', { file_path: '/proc/self/stat' })
    const stat = text(r).replace(/^\s*\d+\t/, '')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    t.equal(fields[4], '0', 'tty_nr is 0')
  })

  t.test('no host path in any environment inside, PWD the sandbox path', async (t) => {
    const { sb, dir } = await isolatedSandbox(t, backend, { network: true })
    const r = await sb.run('bash', {
      command: 'for p in /proc/[0-9]*; do tr "\\0" "\\n" < $p/environ 2>/dev/null; done; echo "pwd=$PWD"; readlink /proc/1/cwd',
    })
    const out = text(r)
    t.notMatch(out, dir, 'the session directory appears nowhere')
    t.notMatch(out, /troupe-egress/, 'nor the egress socket directory')
    t.match(out, /^PWD=\/workspace$/m)
    t.match(out, /^pwd=\/workspace$/m)
    t.notMatch(out, /TROUPE_|NODE_OPTIONS|TAP_/, 'nothing of the server environment')
  })
}
