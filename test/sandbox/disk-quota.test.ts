import { statSync } from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { isolatedOrSkip } from '../helpers/sandbox-backend.js'
import { until } from '../helpers/wait.js'
import { isolatedBackend, isolatedSandbox } from './_isolated.js'
import { text } from './_helpers.js'

/**
 * A session's disk quota (TROUPE_SANDBOX_DISK_MIB, 16 MiB here): past it the tool's result says so and is an error,
 * write and edit are refused until files are removed, a sparse file counts at its full length, no one file grows past
 * the quota, and a process that keeps writing in the background is ended.
 */

const gate = isolatedOrSkip()
if (gate.skip) t.test('disk quota', { skip: gate.skip }, () => {})
else await suite()

async function suite() {
  const backend = isolatedBackend({ TROUPE_SANDBOX_DISK_MIB: '16' })
  const QUOTA = /disk quota is spent: its files take [\d.]+ MiB of the 16\.0 MiB it may keep \(TROUPE_SANDBOX_DISK_MIB/

  t.test('past the quota: told, writes refused until files go', async (t) => {
    const { sb } = await isolatedSandbox(t, backend)
    const fill = await sb.run('bash', { command: 'for i in 1 2 3 4; do head -c 5M /dev/zero > /workspace/f$i; done; echo wrote' })
    t.equal(fill.is_error, true)
    t.match(text(fill), /wrote/, "the command's own output is kept")
    t.match(text(fill), QUOTA)
    const refused = await sb.run('write', { file_path: '/workspace/note.txt', content: 'x' })
    t.equal(refused.is_error, true)
    t.match(text(refused), QUOTA)
    t.match(text(refused), /The tool did not run/)
    const read = await sb.run('read', { file_path: '/workspace/f1', limit: 1 })
    t.notMatch(text(read), QUOTA, 'reading is not refused')
    const freed = await sb.run('bash', { command: 'rm /workspace/f3 /workspace/f4; echo freed' })
    t.equal(freed.is_error, false, 'under the quota again: no error')
    const wrote = await sb.run('write', { file_path: '/workspace/note.txt', content: 'x' })
    t.equal(wrote.is_error, false, 'and writing works again')
  })

  t.test('a sparse file counts at its full length', async (t) => {
    const { sb, dir } = await isolatedSandbox(t, backend)
    const r = await sb.run('bash', { command: 'truncate -s 10M /workspace/a; truncate -s 10M /mnt/session/outputs/b; du -k /workspace/a | cut -f1' })
    t.match(text(r), /^0\n/, 'the files take no disk')
    t.equal(statSync(path.join(dir, 'outputs', 'b')).blocks, 0)
    t.equal(r.is_error, true, 'yet 20 MiB of the 16 are spent')
    t.match(text(r), QUOTA)
  })

  t.test('no one file grows past the quota', async (t) => {
    const { sb } = await isolatedSandbox(t, backend)
    const r = await sb.run('bash', { command: 'truncate -s 17M /tmp/big; echo "exit $?"; head -c 20M /dev/zero > /tmp/big2; echo "exit $?"; ls -l /tmp/big2' })
    t.match(text(r), /File size limit exceeded/)
    t.notMatch(text(r), / 20971520 /, 'the write stopped at the limit')
  })

  t.test('a process that keeps writing in the background is ended', async (t) => {
    const { sb } = await isolatedSandbox(t, backend)
    const started = await sb.run('bash', { command: '(i=0; while :; do i=$((i+1)); head -c 2M /dev/zero > /tmp/w$i; sleep 0.2; done) & echo started' })
    t.match(text(started), /started/)
    // The watch looks every two seconds; the writer passes 16 MiB within two, and is ended at a look after that.
    let told = ''
    await until(
      'the writer is ended',
      async () => {
        const r = text(await sb.run('bash', { command: 'n1=$(ls /tmp | wc -l); sleep 2.5; n2=$(ls /tmp | wc -l); echo "counts $n1 $n2"' }))
        const m = /counts (\d+) (\d+)/.exec(r)
        told = r
        return m && m[1] === m[2] ? true : undefined
      },
      30_000,
    )
    t.match(told, QUOTA, 'the session is told it is over')
    t.match(text(await sb.run('bash', { command: 'rm -f /tmp/w*; echo clean' })), /^clean$/, 'and goes on once it removes files')
  })
}
