import { createHash, randomBytes } from 'node:crypto'
import { mkdtempSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { toFile } from '@anthropic-ai/sdk'
import t from 'tap'
import { isolatedOrSkip } from '../helpers/sandbox-backend.js'
import { agentAndEnv, collect, isIdle, sessionStack } from '../sessions/_helpers.js'

/**
 * Session file resources in the isolated backend: the copies at their mount paths under /mnt/session/uploads, byte for
 * byte, read-only to every tool, and resources added or deleted on an idle session showing (or gone) in the running
 * sandbox at its next tool.
 */

const gate = isolatedOrSkip()
if (gate.skip) t.test('session files in the isolated backend', { skip: gate.skip }, () => {})
else await suite()

async function suite() {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'troupe-isolated-files-'))
  const s = await sessionStack({ TROUPE_DATA_DIR: dataDir, TROUPE_SANDBOX: 'isolated' })
  const UP = '/mnt/session/uploads'
  const textOf = (ev: any) => (ev.content as any[]).map((c) => c.text).join('')
  const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex')
  const upload = async (bytes: Uint8Array, name: string) =>
    s.client.beta.files.upload({ file: await toFile(bytes, name, { type: 'application/octet-stream' }) })

  /** One turn in which the model calls each tool in turn; their results, in order. */
  async function tools(id: string, ...calls: Array<[string, Record<string, unknown>]>): Promise<Array<{ text: string; isError: boolean }>> {
    s.model.enqueue(...calls.map(([name, input]) => ({ steps: [{ type: 'tool_use' as const, name, input }] })), { steps: [{ type: 'text', text: 'done' }] })
    const stream = await s.client.beta.sessions.events.stream(id)
    await s.client.beta.sessions.events.send(id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'go' }] }] } as any)
    const events = await collect(stream, isIdle, 60_000)
    return events.filter((e) => e.type === 'agent.tool_result').map((e) => ({ text: textOf(e), isError: e.is_error }))
  }

  const { agent, env } = await agentAndEnv(s.client, { tools: [{ type: 'agent_toolset_20260401' }] })
  // Over three object-store chunks, every byte value included.
  const big = Buffer.concat([Buffer.from(Array.from({ length: 256 }, (_, i) => i)), randomBytes(3 * 1024 * 1024 + 17)])
  const small = Buffer.from('line one\nline two\n')
  const bigFile = await upload(big, 'big.bin')
  const smallFile = await upload(small, 'small.txt')
  const session = await s.client.beta.sessions.create({
    agent: agent.id,
    environment_id: env.id,
    resources: [
      { type: 'file', file_id: bigFile.id },
      { type: 'file', file_id: smallFile.id, mount_path: `${UP}/deep/dir/small.txt` },
    ],
  } as any)
  const bigPath = `${UP}/${bigFile.id}`

  t.test('a tool reads each file at its mount path, exactly', async (t) => {
    const [hash, read, listing] = await tools(
      session.id,
      ['bash', { command: `sha256sum ${bigPath} | cut -d' ' -f1; stat -c %s ${bigPath}` }],
      ['read', { file_path: `${UP}/deep/dir/small.txt` }],
      ['bash', { command: `cd ${UP} && find . | LC_ALL=C sort` }],
    )
    t.notOk(hash!.isError, hash!.text)
    t.same(hash!.text.trim().split('\n'), [sha(big), String(big.length)], 'the same bytes')
    t.notOk(read!.isError)
    t.match(read!.text, /1\tline one\n\s*2\tline two/)
    t.same(listing!.text.trim().split('\n'), ['.', './deep', './deep/dir', './deep/dir/small.txt', `./${bigFile.id}`], 'nothing else is there')
  })

  t.test('the files are read-only to every tool', async (t) => {
    const [overwrite, create, remove, write, edit, intact] = await tools(
      session.id,
      ['bash', { command: `echo x > ${UP}/deep/dir/small.txt` }],
      ['bash', { command: `touch ${UP}/new` }],
      ['bash', { command: `rm -f ${bigPath}` }],
      ['write', { file_path: `${UP}/deep/dir/small.txt`, content: 'changed' }],
      ['edit', { file_path: `${UP}/deep/dir/small.txt`, old_string: 'one', new_string: 'uno' }],
      ['bash', { command: `cat ${UP}/deep/dir/small.txt; sha256sum ${bigPath} | cut -d' ' -f1` }],
    )
    for (const r of [overwrite, create, remove]) t.match(r!.text, /Read-only file system/, r!.text)
    t.ok(write!.isError, `write: ${write!.text}`)
    t.ok(edit!.isError, `edit: ${edit!.text}`)
    t.equal(intact!.text, `${small.toString()}${sha(big)}`, 'unchanged')
  })

  t.test('an added resource appears in the running sandbox at the next tool; a deleted one goes', async (t) => {
    const extra = await upload(Buffer.from('added later\n'), 'later.txt')
    const added = await s.client.beta.sessions.resources.add(session.id, { type: 'file', file_id: extra.id, mount_path: `${UP}/later.txt` })
    const [cat] = await tools(session.id, ['bash', { command: `cat ${UP}/later.txt` }])
    t.equal(cat!.text, 'added later', 'the same shell, no restart')
    await s.client.beta.sessions.resources.delete(added.id, { session_id: session.id })
    const small2 = session.resources.find((r: any) => r.mount_path.endsWith('small.txt')) as any
    await s.client.beta.sessions.resources.delete(small2.id, { session_id: session.id })
    const [ls] = await tools(session.id, ['bash', { command: `cd ${UP} && find . | LC_ALL=C sort` }])
    t.same(ls!.text.trim().split('\n'), ['.', `./${bigFile.id}`], 'the deleted ones and their directories are gone')
  })
}
