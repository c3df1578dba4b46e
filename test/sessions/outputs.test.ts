import { existsSync, mkdtempSync, readFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { isolatedOrSkip } from '../helpers/sandbox-backend.js'
import { logLines } from '../helpers/troupe.js'
import { agentAndEnv, collect, isIdle, sessionStack, until } from './_helpers.js'

/**
 * Session outputs (actors/workdir/outputs/outputs.ts): what a session's tools write beneath its outputs folder is published as
 * Files scoped to the session before the session goes idle, listed by `files.list({scope_id})` and downloaded exactly;
 * symlinks, FIFOs and what lies outside are not; a rewritten file is a new File, an unchanged one is not published
 * again. On the isolated backend by default; outputs-local.test.ts runs it on the local one.
 */

const local = process.env.TROUPE_SANDBOX === 'local'
const gate = local ? { skip: false as const } : isolatedOrSkip()
if (gate.skip) t.test('session outputs on the isolated backend', { skip: gate.skip }, () => {})
else await suite()

async function suite() {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'troupe-outputs-'))
  const s = await sessionStack({ TROUPE_DATA_DIR: dataDir, TROUPE_SANDBOX: local ? 'local' : 'isolated', TROUPE_FILE_MAX_MIB: '4' })
  const files = s.client.beta.files
  const say = (text: string) => ({ type: 'user.message', content: [{ type: 'text', text }] })
  /** The outputs folder as the session's bash sees it: the local backend runs in the session directory itself. */
  const OUT = local ? 'outputs' : '/mnt/session/outputs'
  const hostOut = (id: string) => path.join(dataDir, 'sessions', id, 'outputs')

  async function newSession() {
    const { agent, env } = await agentAndEnv(s.client, { tools: [{ type: 'agent_toolset_20260401' }] })
    return s.client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
  }

  /** One turn running `commands` in bash, one tool call each; its events up to the idle. */
  async function turn(id: string, ...commands: string[]): Promise<any[]> {
    s.model.enqueue(...commands.map((command) => ({ steps: [{ type: 'tool_use' as const, name: 'bash', input: { command } }] })), {
      steps: [{ type: 'text', text: 'done' }],
    })
    const stream = await s.client.beta.sessions.events.stream(id)
    await s.client.beta.sessions.events.send(id, { events: [say('go')] } as any)
    return collect(stream, isIdle, 60_000)
  }

  /** The session's Files, as the official client lists them (every page). */
  async function published(id: string) {
    const all = []
    for await (const f of files.list({ scope_id: id })) all.push(f)
    return all
  }
  const byName = (list: any[]) => Object.fromEntries(list.map((f) => [f.filename, f]))
  const download = async (id: string) => Buffer.from(await (await files.download(id)).arrayBuffer())

  const ALL_BYTES = Buffer.from(Array.from({ length: 256 }, (_, i) => i))

  t.test('regular files at any depth are published before the idle, with exact bytes; links and FIFOs are not', async (t) => {
    const session = await newSession()
    const events = await turn(
      session.id,
      [
        `mkdir -p ${OUT}/reports/2024 && printf 'hello' > ${OUT}/a.txt`,
        `echo ${ALL_BYTES.toString('base64')} | base64 -d > ${OUT}/all.bin`,
        `head -c 3000000 /dev/urandom > ${OUT}/reports/2024/blob.dat && head -c 5000000 /dev/zero > ${OUT}/too-big.bin`,
        `printf '# title\\n' > ${OUT}/reports/notes.md && : > ${OUT}/empty.json`,
        `ln -s /etc/passwd ${OUT}/passwd && ln -s /etc ${OUT}/etc && ln -s ../a.txt ${OUT}/reports/a-link.txt && mkfifo ${OUT}/fifo`,
        'echo wrote',
      ].join(' && '),
    )
    t.match(
      events
        .filter((e) => e.type === 'agent.tool_result')
        .map((e) => e.content[0].text)
        .join(''),
      /wrote/,
    )
    t.equal(events.at(-1).stop_reason.type, 'end_turn', 'the turn ends as usual')
    // Listed as soon as the idle arrives: published before it.
    const list = await published(session.id)
    const named = byName(list)
    t.same(Object.keys(named).sort(), ['a.txt', 'all.bin', 'empty.json', 'reports/2024/blob.dat', 'reports/notes.md'])
    for (const f of list) {
      t.match(f.id, /^file_/)
      t.same(f.scope, { type: 'session', id: session.id })
      t.equal(f.downloadable, true)
    }
    t.equal(named['a.txt'].mime_type, 'text/plain')
    t.equal(named['reports/notes.md'].mime_type, 'text/markdown')
    t.equal(named['empty.json'].mime_type, 'application/json')
    t.equal(named['all.bin'].mime_type, 'application/octet-stream')
    t.equal(named['reports/2024/blob.dat'].size_bytes, 3_000_000)
    t.same(await download(named['a.txt'].id), Buffer.from('hello'))
    t.same(await download(named['all.bin'].id), ALL_BYTES, 'every byte value, exactly')
    t.same(await download(named['empty.json'].id), Buffer.alloc(0))
    const blob = await download(named['reports/2024/blob.dat'].id)
    t.ok(blob.equals(readFileSync(path.join(hostOut(session.id), 'reports/2024/blob.dat'))), '3 MB of random bytes, exactly')

    // The server's stderr reaches this process on its own schedule.
    const line = await until('the pass logged', () =>
      logLines(s.troupe).find((l) => l.session === session.id && typeof l.msg === 'string' && l.msg.startsWith('session outputs published')),
    )
    t.equal(line.published, 5)
    const why = Object.fromEntries((line.skipped as Array<{ path: string; why: string }>).map((x) => [x.path, x.why]))
    t.same(
      why,
      {
        passwd: 'a symbolic link',
        etc: 'a symbolic link',
        'reports/a-link.txt': 'a symbolic link',
        fifo: 'a FIFO',
        'too-big.bin': 'larger than the limit of 4194304 bytes (TROUPE_FILE_MAX_MIB)',
      },
      'each skip said, with why',
    )
  })

  t.test('a file rewritten in a later turn is a new File (the old one stays); unchanged and touched files are not published again', async (t) => {
    const session = await newSession()
    await turn(session.id, `printf one > ${OUT}/r.txt && printf same > ${OUT}/same.txt && printf kept > ${OUT}/touched.txt`)
    const first = byName(await published(session.id))
    t.same(Object.keys(first).sort(), ['r.txt', 'same.txt', 'touched.txt'])

    await turn(session.id, `printf two > ${OUT}/r.txt && touch -d '+1 hour' ${OUT}/touched.txt && printf kept > ${OUT}/touched.txt`)
    const second = await published(session.id)
    t.equal(second.length, 4, 'one new File')
    const versions = second.filter((f) => f.filename === 'r.txt')
    t.equal(versions.length, 2)
    t.ok(
      versions.some((f) => f.id === first['r.txt'].id),
      'the first one stays',
    )
    const newer = versions.find((f) => f.id !== first['r.txt'].id)!
    t.same(await download(newer.id), Buffer.from('two'))
    t.same(await download(first['r.txt'].id), Buffer.from('one'))

    // A turn with no tool: nothing changed, nothing published. A rewrite back to earlier bytes is new again.
    s.model.enqueue({ steps: [{ type: 'text', text: 'just talk' }] })
    const stream = await s.client.beta.sessions.events.stream(session.id)
    await s.client.beta.sessions.events.send(session.id, { events: [say('talk')] } as any)
    await collect(stream, isIdle, 30_000)
    t.equal((await published(session.id)).length, 4)
    await turn(session.id, `printf one > ${OUT}/r.txt`)
    const third = (await published(session.id)).filter((f) => f.filename === 'r.txt')
    t.equal(third.length, 3, 'bytes published before are published again once they come back')
  })

  t.test('a turn that ends by interrupt or by a model failure still publishes what its tools wrote', async (t) => {
    const session = await newSession()
    s.model.enqueue({ steps: [{ type: 'tool_use', name: 'bash', input: { command: `printf partial > ${OUT}/partial.txt; sleep 60` } }] })
    const stream = await s.client.beta.sessions.events.stream(session.id)
    await s.client.beta.sessions.events.send(session.id, { events: [say('go')] } as any)
    await until('the file written', () => existsSync(path.join(hostOut(session.id), 'partial.txt')))
    await s.client.beta.sessions.events.send(session.id, { events: [{ type: 'user.interrupt' }] } as any)
    await collect(stream, isIdle, 30_000)
    t.same(Object.keys(byName(await published(session.id))), ['partial.txt'])

    s.model.enqueue(
      { steps: [{ type: 'tool_use', name: 'bash', input: { command: `printf failed > ${OUT}/before-failure.txt` } }] },
      { error: { status: 400, type: 'invalid_request_error' } },
    )
    const events = await (async () => {
      const st = await s.client.beta.sessions.events.stream(session.id)
      await s.client.beta.sessions.events.send(session.id, { events: [say('again')] } as any)
      return collect(st, isIdle, 30_000)
    })()
    t.equal(events.at(-1).stop_reason.type, 'retries_exhausted')
    t.same(Object.keys(byName(await published(session.id))).sort(), ['before-failure.txt', 'partial.txt'])
  })

  t.test('a deleted session’s Files stay, listed and downloadable', async (t) => {
    const session = await newSession()
    await turn(session.id, `printf keep > ${OUT}/kept.txt`)
    const [f] = await published(session.id)
    await s.client.beta.sessions.delete(session.id)
    t.same(
      (await published(session.id)).map((x) => x.id),
      [f!.id],
    )
    t.same(await download(f!.id), Buffer.from('keep'))
  })
}
