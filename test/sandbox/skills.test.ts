import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Kvm } from '@nats-io/kv'
import { Objm } from '@nats-io/obj'
import JSZip from 'jszip'
import pino from 'pino'
import t from 'tap'
import { openObjectStore } from '../../actors/kit/object-stores.js'
import { Roster } from '../../actors/kit/roster.js'
import { sessionDir } from '../../actors/workdir/mounts.js'
import { RemoteSandbox } from '../../actors/workdir/remote-sandbox.js'
import { sandboxHostDeps } from '../../actors/workdir/sandbox-host.js'
import type { SandboxOwner, SandboxSpec } from '../../actors/workdir/port.js'
import { InProcessSandbox } from '../../actors/workdir/in-process.js'
import { unpackSkill } from '../../actors/workdir/skills/unpack.js'
import { CANONICAL_DATE, CANONICAL_EXEC_MODE, CANONICAL_MODE } from '../../gateway/skill-bundle.js'
import { decode, encode } from '../../protocol/codec.js'
import { newId } from '../../protocol/ids.js'
import { Buckets, ObjectStores, SANDBOX_HOST_PREFIX, type SandboxHostBeat, sandboxSubject } from '../../protocol/subjects.js'
import { localBackend, openSandboxBackend, readSandboxSetting } from '../../sandbox/index.js'
import { HOST_TTL_MS } from '../../supervisor/placement.js'
import { natsWithClient } from '../helpers/nats.js'
import { isolatedOrSkip } from '../helpers/sandbox-backend.js'
import { startTroupe } from '../helpers/troupe.js'
import { until } from '../helpers/wait.js'

/**
 * Custom skills in a session's isolated sandbox, at the level of the session sandbox (`InProcessSandbox`, as an actor
 * host or a sandbox host runs it): each bundle unpacked from the store at /workspace/skills/<name>/, read-only to
 * every tool, never part of the saved workspace, its mount point made a real directory whatever the agent left there,
 * a crashed unpack finished by the next pass; a local backend refusing such a session; bytes in the store that are not
 * a clean bundle refused.
 */

const text = (r: { content: Array<{ text: string }> }) => r.content.map((c) => c.text).join('')

/** A canonical bundle, as the gateway writes one: `<name>/…` entries, one date, one mode. */
async function bundle(name: string, files: Record<string, string | Uint8Array>): Promise<Uint8Array> {
  const zip = new JSZip()
  for (const [p, body] of Object.entries(files).sort(([a], [b]) => (a < b ? -1 : 1))) {
    zip.file(`${name}/${p}`, body, { date: CANONICAL_DATE, unixPermissions: CANONICAL_MODE, createFolders: false })
  }
  return zip.generateAsync({ type: 'uint8array', compression: 'DEFLATE', compressionOptions: { level: 6 }, platform: 'UNIX' })
}

t.test('unpacking refuses paths and entries a canonical bundle never has', async (t) => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'troupe-unpack-'))
  const cases: Array<[string, (z: JSZip) => void]> = [
    ['traversal', (z) => z.file('s/../../escaped', 'x')],
    ['absolute', (z) => z.file('/etc/escaped', 'x')],
    ['another top-level directory', (z) => z.file('other/x', 'x')],
    ['a symbolic link', (z) => z.file('s/link', '/etc/passwd', { unixPermissions: 0o120777 })],
    ['a file where the directory is', (z) => z.file('s', 'x')],
  ]
  for (const [why, add] of cases) {
    const zip = new JSZip()
    zip.file('s/SKILL.md', '---\nname: s\n---\n', { createFolders: false })
    add(zip)
    const bytes = await zip.generateAsync({ type: 'uint8array', platform: 'UNIX' })
    const dest = path.join(root, why.replaceAll(' ', '-'))
    await t.rejects(unpackSkill({ zip: bytes, name: 's', dest }), why)
  }
  t.notOk(existsSync(path.join(root, 'escaped')), 'nothing landed outside')
  await t.rejects(unpackSkill({ zip: await bundle('s', { 'SKILL.md': 'x' }), name: '..', dest: path.join(root, 'dots') }), 'a name that is not one')
  const ok = await unpackSkill({ zip: await bundle('s', { 'SKILL.md': 'x', 'a/b/c.txt': 'yz' }), name: 's', dest: path.join(root, 'ok') })
  t.same(ok, { files: 2, bytes: 3 })
  t.equal(statSync(path.join(root, 'ok/a/b/c.txt')).mode & 0o777, 0o444, 'files 0444')
  t.equal(statSync(path.join(root, 'ok/a/b')).mode & 0o777, 0o755, 'directories 0755')
  const scripted = new JSZip()
  scripted.file('s/SKILL.md', 'x', { date: CANONICAL_DATE, unixPermissions: CANONICAL_MODE, createFolders: false })
  scripted.file('s/run.sh', '#!/bin/sh\n', { date: CANONICAL_DATE, unixPermissions: CANONICAL_EXEC_MODE, createFolders: false })
  const zip = await scripted.generateAsync({ type: 'uint8array', platform: 'UNIX' })
  await unpackSkill({ zip, name: 's', dest: path.join(root, 'exec') })
  t.equal(statSync(path.join(root, 'exec/run.sh')).mode & 0o777, 0o555, 'an executable entry: 0555')
  t.equal(statSync(path.join(root, 'exec/SKILL.md')).mode & 0o777, 0o444)
})

const gate = isolatedOrSkip()
if (gate.skip) t.test('skills in the isolated backend', { skip: gate.skip }, () => {})
else await suite()

async function suite() {
  const { nats, nc, js, jsm } = await natsWithClient(t)
  const log = pino({ level: 'warn' })
  const storage = { jsm, replicas: 1, lowerReplicas: false, log }
  const bundles = await openObjectStore(new Objm(js), storage, ObjectStores.skills)
  const backend = openSandboxBackend(readSandboxSetting({ ...process.env, TROUPE_SANDBOX: 'isolated' }))
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'troupe-skills-'))
  const deps = await sandboxHostDeps({ nc, storage, log, dataDir, backend })
  const owner: SandboxOwner = { dead: false, alive: () => undefined, checkServing: () => undefined, report: () => undefined }
  const noPackages = { apt: [], cargo: [], gem: [], go: [], npm: [], pip: [] }
  const specWith = (skills: SandboxSpec['skills']): SandboxSpec => ({ network: undefined, packages: noPackages, resources: [], skills })

  const NAME = 'report-writer'
  const notes = 'Notes for the report.\nSecond line.\n'
  const object = `skill_01TEST.${newId('sesn').slice(5)}`
  await bundles.putBlob({ name: object }, await bundle(NAME, { 'SKILL.md': `---\nname: ${NAME}\ndescription: d\n---\nBody\n`, 'ref/notes.md': notes }))
  const spec = specWith([{ name: NAME, object }])

  /** A session's sandbox on `deps`' host; closed at the end. */
  function sandboxOf(id = newId('sesn'), s = spec, d = deps) {
    const sb = new InProcessSandbox(id, () => s, owner, d)
    t.teardown(() => sb.remove())
    return { id, sb, dir: sessionDir(d.dataDir, id) }
  }
  const signal = () => new AbortController().signal
  async function run(sb: InProcessSandbox, name: string, input: Record<string, unknown>) {
    const prepared = await sb.prepare(signal())
    if (prepared.kind !== 'ready') throw new Error(`not ready: ${JSON.stringify(prepared)}`)
    const r = await sb.runTool(name, input, signal())
    // A command's output ends without its last newline.
    return { text: text(r), isError: r.is_error }
  }

  const SK = `/workspace/skills/${NAME}`

  t.test('the skill is at /workspace/skills/<name>, for bash and the file tools', async (t) => {
    const { sb, dir } = sandboxOf()
    const cat = await run(sb, 'bash', { command: `cat ${SK}/ref/notes.md; cd /workspace/skills && find . | LC_ALL=C sort` })
    t.notOk(cat.isError, cat.text)
    t.equal(cat.text, `${notes}.\n./${NAME}\n./${NAME}/SKILL.md\n./${NAME}/ref\n./${NAME}/ref/notes.md`)
    const read = await run(sb, 'read', { file_path: `${SK}/ref/notes.md` })
    t.notOk(read.isError, read.text)
    t.match(read.text, /1\tNotes for the report\.\n\s*2\tSecond line\./)
    const glob = await run(sb, 'glob', { pattern: '**/*.md', path: '/workspace/skills' })
    t.same(glob.text.split('\n').sort(), [`${NAME}/SKILL.md`, `${NAME}/ref/notes.md`])
    const grep = await run(sb, 'grep', { pattern: 'Second', path: '/workspace/skills', output_mode: 'content' })
    t.match(grep.text, /notes\.md.*Second line/)
    const host = path.join(dir, 'skills', NAME)
    t.equal(statSync(path.join(host, 'ref/notes.md')).mode & 0o777, 0o444)
    t.equal(statSync(path.join(host, 'ref')).mode & 0o777, 0o755)
    t.equal(statSync(path.join(host, 'ref/notes.md')).uid, process.getuid!(), "the server's")
    t.same(
      readdirSync(dir).filter((n) => n.startsWith('.skills')),
      ['.skills.json'],
      'no partial directory left',
    )
  })

  t.test('the skills are read-only to every tool', async (t) => {
    const { sb } = sandboxOf()
    const rs = []
    for (const command of [
      'touch /workspace/skills/x',
      `echo x > ${SK}/SKILL.md`,
      `rm -rf ${SK}/ref`,
      `chmod 777 ${SK}/SKILL.md`,
      `mv /workspace/skills /workspace/elsewhere`,
    ]) {
      rs.push(await run(sb, 'bash', { command }))
    }
    for (const r of rs.slice(0, 4)) t.match(r.text, /Read-only file system/, r.text)
    t.match(rs[4]!.text, /Device or resource busy|Read-only file system/, rs[4]!.text)
    const write = await run(sb, 'write', { file_path: `${SK}/SKILL.md`, content: 'changed' })
    t.ok(write.isError, `write: ${write.text}`)
    const create = await run(sb, 'write', { file_path: `${SK}/new.md`, content: 'new' })
    t.ok(create.isError, `write a new file: ${create.text}`)
    const edit = await run(sb, 'edit', { file_path: `${SK}/ref/notes.md`, old_string: 'Second', new_string: 'Third' })
    t.ok(edit.isError, `edit: ${edit.text}`)
    const intact = await run(sb, 'bash', { command: `cat ${SK}/ref/notes.md; ls /workspace/skills` })
    t.equal(intact.text, `${notes}${NAME}`)
  })

  t.test('the saved workspace does not carry skills/; a move unpacks them again on the new host', async (t) => {
    const { id, sb } = sandboxOf()
    const r = await run(sb, 'bash', { command: 'echo kept > /workspace/kept.txt && mkdir -p /workspace/sub && echo s > /workspace/sub/f' })
    t.notOk(r.isError, r.text)
    const stored = await deps.workspaces.manifest(id)
    t.ok(stored && 'bytes' in stored, 'a save was made')
    const paths = decode<{ entries: Array<[string, unknown]> }>((stored as { bytes: Uint8Array }).bytes).entries.map(([p]) => p)
    t.same(paths.sort(), ['kept.txt', 'sub', 'sub/f'], 'nothing of skills/')
    await sb.close()
    // Another host: its own data directory, the same stores.
    const elsewhere = await sandboxHostDeps({ nc, storage, log, dataDir: mkdtempSync(path.join(os.tmpdir(), 'troupe-skills-b-')), backend })
    const moved = sandboxOf(id, spec, elsewhere)
    const after = await run(moved.sb, 'bash', { command: `cat /workspace/kept.txt; cat ${SK}/ref/notes.md` })
    t.match(after.text, /^kept\nNotes for the report\.\nSecond line\.\[workspace\] This session moved/)
    t.same(readdirSync(path.join(moved.dir, 'workspace', 'skills')), [], 'the mount point on the host is empty')
  })

  t.test('whatever the agent left at workspace/skills is replaced by an empty directory, never followed', async (t) => {
    const outside = mkdtempSync(path.join(os.tmpdir(), 'troupe-skills-outside-'))
    writeFileSync(path.join(outside, 'precious'), 'keep me')
    for (const plant of ['link', 'file', 'full directory'] as const) {
      const { sb, dir } = sandboxOf()
      const at = path.join(dir, 'workspace', 'skills')
      mkdirSync(path.join(dir, 'workspace'), { recursive: true })
      if (plant === 'link') symlinkSync(outside, at)
      else if (plant === 'file') writeFileSync(at, 'x')
      else {
        mkdirSync(at)
        symlinkSync(outside, path.join(at, 'inner'))
      }
      const r = await run(sb, 'bash', { command: `cat ${SK}/ref/notes.md; ls -A /workspace/skills` })
      t.equal(r.text, `${notes}${NAME}`, `${plant}: the skill is there`)
      t.ok(lstatSync(at).isDirectory(), `${plant}: a real directory now`)
      t.same(readdirSync(at), [], `${plant}: empty beneath the bind`)
    }
    t.same(readdirSync(outside), ['precious'], 'the link target is untouched')
    t.equal(readFileSync(path.join(outside, 'precious'), 'utf8'), 'keep me')
  })

  t.test('a crash midway is finished by the next pass', async (t) => {
    const { sb, dir } = sandboxOf()
    // The manifest names the skill; its unpack was cut off in the partial directory; a skill no longer wanted is there.
    mkdirSync(path.join(dir, '.skills-partial', NAME, 'ref'), { recursive: true })
    writeFileSync(path.join(dir, '.skills-partial', NAME, 'SKILL.md'), 'half')
    mkdirSync(path.join(dir, 'skills', 'stale'), { recursive: true })
    writeFileSync(path.join(dir, '.skills.json'), JSON.stringify([[NAME, object]]))
    const r = await run(sb, 'bash', { command: `cat ${SK}/ref/notes.md; ls /workspace/skills` })
    t.equal(r.text, `${notes}${NAME}`)
    t.notOk(existsSync(path.join(dir, '.skills-partial')), 'the partial directory is gone')
    t.same(JSON.parse(readFileSync(path.join(dir, '.skills.json'), 'utf8')), [[NAME, object]])
  })

  t.test('a skill whose bundle is missing refuses the tool until it is there', async (t) => {
    const later = `skill_01TEST.${newId('sesn').slice(5)}`
    const { sb, dir } = sandboxOf(undefined, specWith([{ name: 'later-one', object: later }]))
    const first = await sb.prepare(signal())
    t.equal(first.kind, 'refused')
    t.match(first.kind === 'refused' && text(first.result), /skills could not be put in place under \/workspace\/skills .*not in the store.*did not run/)
    t.notOk(existsSync(path.join(dir, 'skills', 'later-one')))
    await bundles.putBlob({ name: later }, await bundle('later-one', { 'SKILL.md': 'x' }))
    const r = await run(sb, 'bash', { command: 'cat /workspace/skills/later-one/SKILL.md' })
    t.equal(r.text, 'x')
  })

  t.test('a bundle whose bytes are not a clean one is refused, and nothing of it shows', async (t) => {
    const evil = `skill_01TEST.${newId('sesn').slice(5)}`
    const zip = new JSZip()
    zip.file('evil/SKILL.md', 'x', { createFolders: false })
    zip.file('evil/../../../../escape', 'x', { createFolders: false })
    await bundles.putBlob({ name: evil }, await zip.generateAsync({ type: 'uint8array', platform: 'UNIX' }))
    const { sb, dir } = sandboxOf(undefined, specWith([{ name: 'evil', object: evil }]))
    const p = await sb.prepare(signal())
    t.equal(p.kind, 'refused')
    t.match(p.kind === 'refused' && text(p.result), /not a path beneath evil\//)
    t.notOk(existsSync(path.join(dir, 'skills', 'evil')))
    t.notOk(existsSync(path.join(dataDir, 'escape')))
  })

  t.test('on the local backend, a session with skills is refused with the reason', async (t) => {
    const local = { ...deps, backend: localBackend }
    const { sb, dir } = sandboxOf(undefined, spec, local)
    const p = await sb.prepare(signal())
    t.equal(p.kind, 'refused')
    t.match(p.kind === 'refused' && text(p.result), /custom skills run only in isolated sandboxes \(TROUPE_SANDBOX=isolated\)/)
    t.notOk(existsSync(path.join(dir, 'skills')), 'nothing unpacked')
    const none = sandboxOf(undefined, specWith([]), local)
    t.equal((await none.sb.prepare(signal())).kind, 'ready', 'a session without skills runs there as before')
  })

  t.test('a session without skills sees nothing new', async (t) => {
    const { sb, dir } = sandboxOf(undefined, specWith([]))
    const r = await run(sb, 'bash', { command: 'ls -A /workspace; echo made > /workspace/skills && cat /workspace/skills' })
    t.equal(r.text, 'made')
    t.notOk(existsSync(path.join(dir, 'skills')))
  })

  t.test('on sandbox hosts (TROUPE_SANDBOX_PLACEMENT=remote): an isolated one is chosen, and it mounts them the same', async (t) => {
    const started = async (kind: 'isolated' | 'local') => {
      const dir = mkdtempSync(path.join(os.tmpdir(), `troupe-skills-sbx-${kind}-`))
      const p = await startTroupe({ role: 'sandbox', natsUrl: nats.url, env: { TROUPE_DATA_DIR: dir, TROUPE_SANDBOX: kind } })
      t.teardown(() => p.stop())
      return { dir, id: await until(`the ${kind} sandbox host names itself`, () => /host\s+(host_\w+)/.exec(p.stdout())?.[1]) }
    }
    const [isolated, local] = [await started('isolated'), await started('local')]
    const roster = new Roster<SandboxHostBeat>(await new Kvm(js).open(Buckets.hosts), { prefix: SANDBOX_HOST_PREFIX, beatMs: 500, ttlMs: HOST_TTL_MS, log })
    await roster.start()
    t.teardown(() => roster.stop())
    await until('both sandbox hosts are heard', () => roster.value(isolated.id) && roster.value(local.id))
    // A session the local host would get, were it not for its skills.
    let session = newId('sesn')
    while (roster.preferred(session) !== local.id) session = newId('sesn')
    // An actor that always serves and says nothing, as an actor host makes it (actors/session/actor/sandbox.ts).
    const actor = { fence: 1, report: () => undefined, serves: () => true, shellIdleMs: 60_000 }
    const remote = new RemoteSandbox({ ...actor, session, spec: () => spec, roster, nc, workspaces: deps.workspaces, log })
    t.teardown(() => remote.remove())
    t.equal((await remote.prepare(signal())).kind, 'ready')
    const cat = await remote.runTool('bash', { command: `cat ${SK}/ref/notes.md; touch ${SK}/x` }, signal())
    t.match(text(cat), /^Notes for the report\.\nSecond line\.\ntouch: cannot touch '\/workspace\/skills\/report-writer\/x': Read-only file system/)
    const read = await remote.runTool('read', { file_path: `${SK}/SKILL.md` }, signal())
    t.match(text(read), /name: report-writer/)
    t.ok(existsSync(path.join(sessionDir(isolated.dir, session), 'skills', NAME, 'SKILL.md')), 'unpacked on the isolated sandbox host')
    t.notOk(existsSync(sessionDir(local.dir, session)), 'nothing on the local one')
  })

  t.test('a sandbox host on the local backend refuses a session with skills', async (t) => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'troupe-skills-sbx-local-only-'))
    const p = await startTroupe({ role: 'sandbox', natsUrl: nats.url, env: { TROUPE_DATA_DIR: dir, TROUPE_SANDBOX: 'local' } })
    t.teardown(() => p.stop())
    const hostId = await until('the sandbox host names itself', () => /host\s+(host_\w+)/.exec(p.stdout())?.[1])
    const answer = decode<any>(
      (await nc.request(sandboxSubject(hostId, 'prepare'), encode({ session: newId('sesn'), fence: 1, call: 'c1', spec }), { timeout: 30_000 })).data,
    )
    t.match(answer, { ok: true, prepared: { kind: 'refused', result: { is_error: true } } })
    t.match(text(answer.prepared.result), /custom skills run only in isolated sandboxes/)
  })
}
