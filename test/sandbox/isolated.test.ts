import { existsSync, mkdtempSync, readFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { logLines } from '../helpers/troupe.js'
import { pidsOf } from '../helpers/procs.js'
import { isolatedOrSkip } from '../helpers/sandbox-backend.js'
import { agentAndEnv, collect, isIdle, sessionStack, until } from '../sessions/_helpers.js'

/**
 * The isolated backend through real sessions (fake model scripting the tool calls): what the sandbox cannot see or
 * write, its limits holding while the server keeps answering, and everything it started dying on interrupt, session
 * delete and a SIGKILLed server.
 */

const gate = isolatedOrSkip()
if (gate.skip) t.test('the isolated backend', { skip: gate.skip }, () => {})
else await suite()

async function suite() {
  const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'troupe-isolated-'))
  const s = await sessionStack({ TROUPE_DATA_DIR: dataDir, TROUPE_SANDBOX: 'isolated', TROUPE_SANDBOX_PIDS: '64', TROUPE_SANDBOX_MEMORY_MIB: '128' })
  const TOOLSET = [{ type: 'agent_toolset_20260401' }]
  const say = (text: string) => ({ type: 'user.message', content: [{ type: 'text', text }] })
  const textOf = (ev: any) => (ev.content as any[]).map((c) => c.text).join('')

  async function newSession() {
    const { agent, env } = await agentAndEnv(s.client, { tools: TOOLSET })
    return s.client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
  }

  /** One turn in which the model calls each tool in turn; their results, in order. */
  async function tools(id: string, ...calls: Array<[string, Record<string, unknown>]>): Promise<Array<{ text: string; isError: boolean }>> {
    s.model.enqueue(...calls.map(([name, input]) => ({ steps: [{ type: 'tool_use' as const, name, input }] })), { steps: [{ type: 'text', text: 'done' }] })
    const stream = await s.client.beta.sessions.events.stream(id)
    await s.client.beta.sessions.events.send(id, { events: [say('go')] } as any)
    const events = await collect(stream, isIdle, 30_000)
    return events.filter((e) => e.type === 'agent.tool_result').map((e) => ({ text: textOf(e), isError: e.is_error }))
  }

  const waitGone = async (args: string, ms: number) => {
    const deadline = Date.now() + ms
    while (pidsOf(args).length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
    return pidsOf(args).length === 0
  }

  t.test('start-up names the isolated backend and why', async (t) => {
    const line = logLines(s.troupe).find((l) => typeof l.msg === 'string' && l.msg.startsWith('sandbox: '))
    t.match(line?.msg, /^sandbox: isolated \(TROUPE_SANDBOX=isolated: one bubblewrap sandbox per session/)
  })

  t.test('the host is out of sight: its secrets, the data directory, the repository, the server environment', async (t) => {
    const session = await newSession()
    const [bash, shadow, data, repo, link] = await tools(
      session.id,
      [
        'bash',
        {
          command: `cat /etc/shadow; ls ${dataDir}; ls ${REPO}/package.json; env | grep -c -e fake-key -e NATS_URL -e TROUPE_; ln -s /etc/shadow s; ln -s ${dataDir} d; id -u; echo "top: $(ls / | tr '\\n' ' ')"`,
        },
      ],
      ['read', { file_path: '/etc/shadow' }],
      ['glob', { pattern: '**/*', path: dataDir }],
      ['read', { file_path: `${REPO}/package.json` }],
      ['read', { file_path: 's' }],
    )
    t.match(bash!.text, `cat: /etc/shadow: No such file or directory`)
    t.match(bash!.text, `ls: cannot access '${dataDir}': No such file or directory`)
    t.match(bash!.text, `ls: cannot access '${REPO}/package.json': No such file or directory`)
    t.match(bash!.text, /^0$/m, 'no server variable inside')
    t.match(bash!.text, /^1000$/m, 'uid 1000 inside')
    t.match(bash!.text, /^top: bin dev etc lib lib64 mnt opt proc run sbin tmp usr var workspace\s*$/m, 'nothing else of the host at the top')
    t.equal(shadow!.isError, true)
    t.match(shadow!.text, 'No such file or directory: /etc/shadow')
    t.equal(data!.isError, true)
    t.match(data!.text, /No such file or directory|Not a directory/)
    t.equal(repo!.isError, true)
    t.equal(link!.isError, true, 'a symlink to a host path resolves inside the sandbox, to nothing')
    t.ok(existsSync(path.join(dataDir, 'sessions', session.id, 'workspace', 's')), 'the link itself is in the workspace')
  })

  t.test('runs as an unprivileged host uid with no capabilities', async (t) => {
    const session = await newSession()
    const marker = `sleep 47.${process.pid % 1000}`
    const [bash] = await tools(session.id, ['bash', { command: `(${marker} &); grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status` }])
    t.match(bash!.text, /CapEff:\s+0+\n/)
    t.match(bash!.text, /CapBnd:\s+0+/)
    const [pid] = pidsOf(marker)
    t.ok(pid, 'the background sleep runs')
    const uid = readFileSync(`/proc/${pid}/status`, 'utf8').match(/^Uid:\s+(\d+)/m)?.[1]
    t.equal(uid, process.geteuid?.() === 0 ? '65534' : String(process.geteuid?.()), 'its host uid')
  })

  t.test('uploads are read-only; outputs, /tmp and the workspace are writable and land in the session directory', async (t) => {
    const session = await newSession()
    const [bash, write] = await tools(
      session.id,
      ['bash', { command: 'touch /mnt/session/uploads/x; echo out > /mnt/session/outputs/o.txt && echo tmp > /tmp/t && echo ws > w.txt && echo wrote' }],
      ['write', { file_path: '/mnt/session/uploads/y.txt', content: 'no' }],
    )
    t.match(bash!.text, /Read-only file system/)
    t.match(bash!.text, /wrote/)
    t.equal(write!.isError, true)
    t.match(write!.text, /Read-only file system/)
    const root = path.join(dataDir, 'sessions', session.id)
    t.equal(readFileSync(path.join(root, 'outputs', 'o.txt'), 'utf8'), 'out\n')
    t.equal(readFileSync(path.join(root, 'workspace', 'w.txt'), 'utf8'), 'ws\n')
    t.notOk(existsSync(path.join(root, 'uploads', 'x')))
  })

  t.test('a fork bomb is held at the process limit, the server keeps answering, and the timeout clears it', async (t) => {
    const session = await newSession()
    const [bomb] = await tools(session.id, ['bash', { command: 'bomb() { bomb | bomb & }; bomb; sleep 30', timeout_ms: 3_000 }])
    t.match(bomb!.text, /timed out/)
    const started = Date.now()
    await s.client.beta.agents.list()
    t.ok(Date.now() - started < 5_000, 'the server answers')
    const marker = `sleep 48.${process.pid % 1000}`
    const [after] = await tools(session.id, ['bash', { command: `(${marker} &); echo alive` }])
    t.match(after!.text, /alive/, 'the shell still answers')
    const [pid] = pidsOf(marker)
    const group = readFileSync(`/proc/${pid}/cgroup`, 'utf8').match(/^\d+:pids:(.*)$/m)?.[1]
    if (!group) return t.comment('no pids cgroup here: the rlimit held it')
    const dir = path.join('/sys/fs/cgroup/pids', group)
    t.equal(readFileSync(path.join(dir, 'pids.max'), 'utf8').trim(), '64')
    t.match(readFileSync(path.join(dir, 'pids.events'), 'utf8'), /^max [1-9]/m, 'forks were refused at the limit')
    const left = Number(readFileSync(path.join(dir, 'pids.current'), 'utf8'))
    t.ok(left < 10, `the bomb is gone: the timeout killed every job (${left} tasks left in the group)`)
  })

  t.test('a memory hog is killed at the memory limit; the shell and the server carry on', async (t) => {
    const session = await newSession()
    const [hog, next] = await tools(session.id, ['bash', { command: 'tail /dev/zero' }], ['bash', { command: 'echo alive' }])
    t.equal(hog!.isError, true)
    t.match(hog!.text, /Killed|exit code 137/)
    t.match(next!.text, /alive/)
  })

  t.test('user.interrupt kills the command and every child it started within a second', async (t) => {
    const session = await newSession()
    const tag = process.pid % 1000
    const [fg, bg] = [`sleep 1000.${tag}`, `sleep 1001.${tag}`]
    s.model.enqueue({ steps: [{ type: 'tool_use', name: 'bash', input: { command: `bash -c '${bg} & ${fg}'` } }] })
    const stream = await s.client.beta.sessions.events.stream(session.id)
    await s.client.beta.sessions.events.send(session.id, { events: [say('sleep')] } as any)
    const waiting = collect(stream, isIdle, 30_000)
    for (let i = 0; i < 200 && (pidsOf(fg).length === 0 || pidsOf(bg).length === 0); i++) await new Promise((r) => setTimeout(r, 25))
    t.equal(pidsOf(fg).length + pidsOf(bg).length, 2, 'both sleeps run')
    const sent = Date.now()
    await s.client.beta.sessions.events.send(session.id, { events: [{ type: 'user.interrupt' }] } as any)
    t.ok(await waitGone(fg, 1_000), 'the command is gone within a second')
    t.ok(await waitGone(bg, 1_000 - (Date.now() - sent)), 'its background child too')
    const events = await waiting
    t.match(textOf(events.find((e) => e.type === 'agent.tool_result')), /interrupted/)
  })

  t.test('deleting a session kills what its sandbox still runs', async (t) => {
    const session = await newSession()
    const marker = `sleep 1002.${process.pid % 1000}`
    await tools(session.id, ['bash', { command: `(setsid ${marker} > /dev/null 2>&1 &); echo started` }])
    // Backgrounded, it may not have exec'd yet when the shell says it started: waited for, not assumed.
    t.ok(await until('the setsid child', () => pidsOf(marker).length === 1, 5_000), 'a setsid child outside the shell session runs')
    await s.client.beta.sessions.delete(session.id)
    t.ok(await waitGone(marker, 3_000), 'gone with the session')
  })

  t.test('a SIGKILLed server leaves no sandbox process behind', async (t) => {
    const session = await newSession()
    const marker = `sleep 1003.${process.pid % 1000}`
    await tools(session.id, ['bash', { command: `(setsid ${marker} > /dev/null 2>&1 &); echo started` }])
    t.ok(await until('the setsid child', () => pidsOf(marker).length === 1, 5_000))
    await s.troupe.kill()
    t.ok(await waitGone(marker, 3_000), 'each sandbox dies with its parent')
  })
}
