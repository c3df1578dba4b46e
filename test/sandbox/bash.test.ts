import { readFile, realpath } from 'node:fs/promises'
import path from 'node:path'
import t from 'tap'
import { gone, sandboxFor, text } from './_helpers.js'

t.test('cwd and exported variables persist between calls', async (t) => {
  const { sb, dir } = await sandboxFor(t)
  const real = await realpath(dir)
  const first = await sb.run('bash', { command: 'pwd' })
  t.equal(first.is_error, false)
  t.equal(text(first), real)

  t.equal((await sb.run('bash', { command: 'mkdir -p sub/deeper && cd sub/deeper && export TROUPE_X=hello' })).is_error, false)
  const r = await sb.run('bash', { command: 'pwd; echo "$TROUPE_X"' })
  t.equal(text(r), `${path.join(real, 'sub/deeper')}\nhello`)
})

t.test('output has no command echo, sentinel or ANSI noise', async (t) => {
  const { sb } = await sandboxFor(t)
  const r = await sb.run('bash', { command: "printf '\\033[31mred\\033[0m\\n'; printf 'one\\rtwo\\n'; echo done" })
  t.equal(text(r), 'red\ntwo\ndone')
  t.notMatch(text(r), /TROUPE|printf/)
})

t.test('output without a trailing newline is kept', async (t) => {
  const { sb } = await sandboxFor(t)
  t.equal(text(await sb.run('bash', { command: 'printf abc' })), 'abc')
})

t.test('multi-line commands and heredocs run as a script', async (t) => {
  const { sb } = await sandboxFor(t)
  const command = ['f() {', '  echo "in f: $1"', '}', 'f one', "cat <<'EOF'", 'heredoc $HOME', 'EOF'].join('\n')
  t.equal(text(await sb.run('bash', { command })), 'in f: one\nheredoc $HOME')
})

t.test('non-zero exit status is an error with the exit code', async (t) => {
  const { sb } = await sandboxFor(t)
  const r = await sb.run('bash', { command: 'echo oops >&2; (exit 3)' })
  t.equal(r.is_error, true)
  t.match(text(r), /oops/)
  t.match(text(r), /exit code 3/)

  const ok = await sb.run('bash', { command: 'true' })
  t.equal(ok.is_error, false)
  t.equal(text(ok), '(no output)')
})

t.test('stdin is /dev/null so reads do not hang', async (t) => {
  const { sb } = await sandboxFor(t)
  const r = await sb.run('bash', { command: 'cat; read -r x; echo "got:[$x]"', timeout_ms: 20_000 })
  t.equal(text(r), 'got:[]')
})

t.test('timeout kills the command and keeps the shell', async (t) => {
  const { sb } = await sandboxFor(t)
  await sb.run('bash', { command: 'export KEEP=yes' })
  const started = Date.now()
  const r = await sb.run('bash', { command: 'echo before; sleep 30', timeout_ms: 300 })
  t.ok(Date.now() - started < 15_000, 'did not wait for sleep 30')
  t.equal(r.is_error, true)
  t.match(text(r), /before/)
  t.match(text(r), /timed out after 300 ms/)
  const after = await sb.run('bash', { command: 'echo "$KEEP"' })
  t.equal(text(after), 'yes', 'shell state survived the interrupt')
})

t.test('timeout also kills a command that ignores SIGINT', async (t) => {
  const { sb } = await sandboxFor(t)
  const started = Date.now()
  const r = await sb.run('bash', { command: "(trap '' INT; sleep 30)", timeout_ms: 300 })
  t.ok(Date.now() - started < 20_000, 'did not wait for sleep 30')
  t.match(text(r), /timed out/)
  t.equal(text(await sb.run('bash', { command: 'echo alive' })), 'alive')
})

t.test('the default timeout comes from bashTimeoutMs', async (t) => {
  const { sb } = await sandboxFor(t, { bashTimeoutMs: 300 })
  const r = await sb.run('bash', { command: 'sleep 30' })
  t.match(text(r), /timed out after 300 ms/)
})

t.test('aborting the signal kills sleep 30 quickly', async (t) => {
  const { sb, dir } = await sandboxFor(t)
  const ac = new AbortController()
  const started = Date.now()
  // exec keeps the pid, so the file names the very process that must die.
  const pending = sb.run('bash', { command: "sh -c 'echo $$ > sleep.pid; exec sleep 30'" }, ac.signal)
  setTimeout(() => ac.abort(), 300)
  const r = await pending
  t.ok(Date.now() - started < 15_000, 'resolved long before sleep 30 would end')
  t.equal(r.is_error, true)
  t.match(text(r), /interrupted/)
  const pid = Number((await readFile(path.join(dir, 'sleep.pid'), 'utf8')).trim())
  t.ok(pid > 0, 'sleep started')
  t.ok(await gone(pid), 'sleep was killed')
  t.equal(text(await sb.run('bash', { command: 'echo still-usable' })), 'still-usable')
})

t.test('an already-aborted signal does not run the command', async (t) => {
  const { sb, dir } = await sandboxFor(t)
  const ac = new AbortController()
  ac.abort()
  const r = await sb.run('bash', { command: 'touch ran' }, ac.signal)
  t.equal(r.is_error, true)
  t.match(text(r), /interrupted/i)
  const check = await sb.run('read', { file_path: path.join(dir, 'ran') })
  t.equal(check.is_error, true)
})

t.test('restart gives a fresh shell in the workdir', async (t) => {
  const { sb, dir } = await sandboxFor(t)
  await sb.run('bash', { command: 'mkdir -p x && cd x && export GONE=1' })
  const r = await sb.run('bash', { restart: true })
  t.equal(r.is_error, false)
  t.match(text(r), /restarted/)
  const after = await sb.run('bash', { command: 'pwd; echo "[${GONE:-}]"' })
  t.equal(text(after), `${await realpath(dir)}\n[]`)

  const both = await sb.run('bash', { restart: true, command: 'echo fresh' })
  t.equal(text(both), 'fresh')
})

t.test('exit ends the shell; the next call starts a new one', async (t) => {
  const { sb, dir } = await sandboxFor(t)
  await sb.run('bash', { command: 'mkdir -p y && cd y' })
  const r = await sb.run('bash', { command: 'exit 4' })
  t.equal(r.is_error, true)
  t.match(text(r), /shell exited with code 4/)
  t.equal(text(await sb.run('bash', { command: 'pwd' })), await realpath(dir))
})

t.test('calls issued together run one after another', async (t) => {
  const { sb } = await sandboxFor(t)
  const [a, b, c] = await Promise.all([
    sb.run('bash', { command: 'sleep 0.2; echo a' }),
    sb.run('bash', { command: 'echo b' }),
    sb.run('bash', { command: 'echo c' }),
  ])
  t.same([a, b, c].map(text), ['a', 'b', 'c'])
})

t.test('large output is capped with a note', async (t) => {
  const { sb } = await sandboxFor(t, { maxOutputChars: 1_000 })
  const r = await sb.run('bash', { command: 'seq 1 5000' })
  const out = text(r)
  t.equal(r.is_error, false)
  t.match(out, /\[output truncated: showed \d+ of \d+ characters\]$/)
  const [, shown, total] = /showed (\d+) of (\d+)/.exec(out) ?? []
  t.equal(Number(shown), 1_000)
  t.ok(Number(total) > 20_000)
  t.ok(out.startsWith('1\n2\n3\n'))
})

t.test('close kills background jobs and later calls fail cleanly', async (t) => {
  const { sb } = await sandboxFor(t)
  const r = await sb.run('bash', { command: 'sleep 1000 & echo $!' })
  const pid = Number(text(r).split('\n').at(-1))
  t.ok(pid > 0, 'got background pid')
  await sb.close()
  t.ok(await gone(pid), 'background sleep was killed')
  await sb.close() // idempotent
  const after = await sb.run('bash', { command: 'echo hi' })
  t.equal(after.is_error, true)
  t.match(text(after), /closed/)
})

t.test('bash input validation', async (t) => {
  const { sb } = await sandboxFor(t)
  for (const bad of [{}, { command: '' }, { command: 5 }, { command: 'ls', timeout_ms: -1 }, { restart: 'yes' }, 'ls']) {
    const r = await sb.run('bash', bad)
    t.equal(r.is_error, true, JSON.stringify(bad))
    t.match(text(r), /Invalid input for bash/)
  }
})

t.test('close while a command runs resolves it as an error', async (t) => {
  const { sb } = await sandboxFor(t)
  await sb.run('bash', { command: 'true' })
  const pending = sb.run('bash', { command: 'sleep 30' })
  setTimeout(() => void sb.close(), 200)
  const started = Date.now()
  const r = await pending
  t.ok(Date.now() - started < 15_000, 'did not wait for sleep 30')
  t.equal(r.is_error, true)
})

t.test('redirecting the shell stdout does not hide completion', async (t) => {
  const { sb } = await sandboxFor(t)
  const r = await sb.run('bash', { command: 'exec 3>&1 >/dev/null; echo hidden', timeout_ms: 20_000 })
  t.equal(r.is_error, false)
  t.equal(text(r), '(no output)')
  t.equal(text(await sb.run('bash', { command: 'exec >&3; echo back', timeout_ms: 20_000 })), 'back')
})
