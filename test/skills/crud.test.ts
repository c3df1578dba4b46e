import { toFile } from '@anthropic-ai/sdk'
import JSZip from 'jszip'
import t from 'tap'
import { stack } from '../helpers/stack.js'
import { raw } from '../helpers/troupe.js'
import { failure } from '../sessions/_helpers.js'

/**
 * Skills through the official client (issue 27, points 1–3): uploads as `files[]` parts (the client's) and as one zip
 * in `file` (raw multipart), each validated and stored as a canonical zip re-rooted under the frontmatter name;
 * versions numbered "1", "2", …; lists by source and by skill; deletes in their order; bad bundles refused with the
 * offending path named, nothing stored.
 */

const s = await stack()
const skills = s.client.beta.skills

const skillMd = (name: string, description = 'Says hello.') => `---\nname: ${name}\ndescription: ${description}\n---\n\n# ${name}\n\nSay hello.\n`
async function filesOf(dir: string, name = dir, extra: Record<string, string> = {}) {
  const entries: Record<string, string> = { [`${dir}/SKILL.md`]: skillMd(name), [`${dir}/scripts/hello.sh`]: 'echo hello\n', ...extra }
  return Promise.all(Object.entries(entries).map(([path, text]) => toFile(Buffer.from(text), path)))
}
async function zipOf(entries: Record<string, string>): Promise<Buffer> {
  const z = new JSZip()
  for (const [path, text] of Object.entries(entries)) z.file(path, text)
  return z.generateAsync({ type: 'nodebuffer' })
}
/** A multipart body by hand: `parts` of [name, filename | undefined, bytes]. */
function multipart(parts: Array<[string, string | undefined, Buffer | string]>) {
  const boundary = `----troupe${Math.random().toString(16).slice(2)}`
  const chunks: Buffer[] = []
  for (const [name, filename, bytes] of parts) {
    const disposition = `form-data; name="${name}"${filename === undefined ? '' : `; filename="${filename}"`}`
    chunks.push(
      Buffer.from(`--${boundary}\r\ncontent-disposition: ${disposition}\r\n${filename === undefined ? '' : 'content-type: application/octet-stream\r\n'}\r\n`),
    )
    chunks.push(Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes), Buffer.from('\r\n'))
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`))
  return { body: Buffer.concat(chunks), type: `multipart/form-data; boundary=${boundary}` }
}
async function post(path: string, parts: Array<[string, string | undefined, Buffer | string]>, headers: Record<string, string> = {}) {
  const m = multipart(parts)
  const res = await fetch(`${s.url}${path}`, { method: 'POST', body: m.body, headers: { 'content-type': m.type, ...headers } })
  return { status: res.status, json: (await res.json()) as any }
}

t.test('create from files[], get, list, a second version, download, delete in order', async (t) => {
  const skill = await skills.create({ files: await filesOf('hello-world'), display_name: 'Hello World' } as any)
  t.match(skill, {
    id: /^skill_/,
    type: 'skill',
    display_name: 'Hello World',
    display_title: 'Hello World',
    latest_version: '1',
    latest_version_id: '1',
    source: { type: 'custom' },
  })
  t.same(await skills.retrieve(skill.id), skill)
  const listed = await skills.list({ source: 'custom' } as any)
  t.ok(listed.data.some((x) => x.id === skill.id))
  t.same((await skills.list({ source: 'anthropic' } as any)).data, [], 'vendor-managed sources list nothing here')

  const v2 = await skills.versions.create(skill.id, { files: await filesOf('hello-world', 'hello-world', { 'hello-world/README.md': 'more\n' }) })
  t.match(v2, { id: '2', type: 'skill_version', skill_id: skill.id, version: '2', name: 'hello-world', description: 'Says hello.' })
  t.equal((await skills.retrieve(skill.id)).latest_version_id, '2')
  const versions = await skills.versions.list(skill.id)
  t.same(
    versions.data.map((v) => v.id),
    ['2', '1'],
    'newest first',
  )
  t.same(await skills.versions.retrieve('1', { skill_id: skill.id }), versions.data[1])

  const res = await skills.versions.download('2', { skill_id: skill.id })
  t.equal(res.headers.get('content-type'), 'application/zip')
  const zip = await JSZip.loadAsync(Buffer.from(await res.arrayBuffer()))
  t.same(
    Object.keys(zip.files)
      .filter((p) => !zip.files[p]!.dir)
      .sort(),
    ['hello-world/README.md', 'hello-world/SKILL.md', 'hello-world/scripts/hello.sh'],
  )

  const refused = await failure(skills.delete(skill.id))
  t.equal(refused.status, 409, 'a skill with versions is not deleted')
  t.match(refused.error.error.message, /2 version/)
  t.same(await skills.versions.delete('1', { skill_id: skill.id }), { id: '1', type: 'skill_version_deleted' })
  t.equal((await failure(skills.versions.retrieve('1', { skill_id: skill.id }))).status, 404, 'hidden at once')
  t.equal((await skills.retrieve(skill.id)).latest_version_id, '2')
  await skills.versions.delete('2', { skill_id: skill.id })
  t.equal((await skills.retrieve(skill.id)).latest_version_id, null)
  t.same(await skills.delete(skill.id), { id: skill.id, type: 'skill_deleted' })
  t.equal((await failure(skills.retrieve(skill.id))).status, 404)
})

t.test('lists answer {data, has_more, next_page}, and the client pages through them', async (t) => {
  const made: string[] = []
  for (const name of ['page-a', 'page-b', 'page-c', 'page-d', 'page-e']) made.push((await skills.create({ files: await filesOf(name) } as any)).id)
  const first = await raw(s.url, 'GET', '/v1/skills?limit=2')
  t.same(Object.keys(first.json).sort(), ['data', 'has_more', 'next_page'], "the spec's envelope")
  t.match(first.json, { has_more: true, next_page: String })
  t.equal(first.json.data.length, 2)
  // The client's auto-pagination, two at a time, newest first: every skill once, ours in the order made, reversed.
  const seen: string[] = []
  for await (const skill of skills.list({ limit: 2 } as any)) seen.push(skill.id)
  t.equal(new Set(seen).size, seen.length, 'none twice')
  t.same(
    seen.filter((id) => made.includes(id)),
    [...made].reverse(),
  )
  let page = await skills.list({ limit: 2 } as any)
  let pages = 1
  while (page.hasNextPage()) {
    page = await page.getNextPage()
    pages++
  }
  t.equal(pages, Math.ceil(seen.length / 2), 'as many pages as it takes, no empty one at the end')
  const last = await raw(s.url, 'GET', `/v1/skills?limit=${seen.length}`)
  t.match(last.json, { has_more: false, next_page: null }, 'the last page says there is no more')
  t.same((await raw(s.url, 'GET', '/v1/skills?source=anthropic')).json, { data: [], has_more: false, next_page: null })

  const skill = await skills.retrieve(made[0]!)
  for (const n of [2, 3]) await skills.versions.create(skill.id, { files: await filesOf('page-a', 'page-a', { 'page-a/v.txt': String(n) }) })
  const versions: string[] = []
  for await (const v of skills.versions.list(skill.id, { limit: 1 })) versions.push(v.id)
  t.same(versions, ['3', '2', '1'], 'versions page one at a time, newest first')
  const v1 = await raw(s.url, 'GET', `/v1/skills/${skill.id}/versions?limit=2`)
  t.match(v1.json, { data: [{ id: '3' }, { id: '2' }], has_more: true, next_page: String })
  const v2 = await raw(s.url, 'GET', `/v1/skills/${skill.id}/versions?limit=2&page=${encodeURIComponent(v1.json.next_page)}`)
  t.same(Object.keys(v2.json).sort(), ['data', 'has_more', 'next_page'])
  t.match(v2.json, { data: [{ id: '1' }], has_more: false, next_page: null })
})

t.test('one zip in "file", re-rooted under its name; the same content makes the same bytes', async (t) => {
  const entries = { 'My_Skill/SKILL.md': skillMd('my-skill'), 'My_Skill/data/a.txt': 'a\n' }
  const a = await post('/v1/skills', [
    ['file', 'bundle.zip', await zipOf(entries)],
    ['display_title', undefined, 'Zip upload'],
  ])
  t.equal(a.status, 200, JSON.stringify(a.json))
  const b = await skills.create({
    files: await Promise.all(
      Object.entries(entries)
        .reverse()
        .map(([p, x]) => toFile(Buffer.from(x), p)),
    ),
  } as any)
  t.equal(b.display_name, 'my-skill', 'the title derives from the name when none is given')
  const bytes = async (id: string) => Buffer.from(await (await skills.versions.download('1', { skill_id: id })).arrayBuffer())
  const [x, y] = await Promise.all([bytes(a.json.id), bytes(b.id)])
  t.ok(x.equals(y), 'canonical: the same bytes whatever the form and order of the upload')
  t.ok((await JSZip.loadAsync(x)).file('my-skill/SKILL.md'), 're-rooted under the frontmatter name')
})

t.test('bad bundles: refused with the rule and the path, nothing stored', async (t) => {
  const before = (await skills.list({ limit: 100 } as any)).data.length
  const cases: Array<[string, Array<[string, string | undefined, Buffer | string]>, RegExp]> = [
    [
      'traversal',
      [
        ['files[]', 'x/SKILL.md', skillMd('x')],
        ['files[]', 'x/../etc/passwd', 'no'],
      ],
      /\.\./,
    ],
    ['no SKILL.md', [['files[]', 'x/README.md', 'hi']], /SKILL\.md/],
    [
      'two top-level directories',
      [
        ['files[]', 'x/SKILL.md', skillMd('x')],
        ['files[]', 'y/a.txt', 'a'],
      ],
      /top-level|one directory/i,
    ],
    ['a reserved word in the name', [['files[]', 'claude-helper/SKILL.md', skillMd('claude-helper')]], /reserved|claude/],
    ['the directory is not the name', [['files[]', 'other/SKILL.md', skillMd('x')]], /other/],
    ['not a zip', [['file', 'a.zip', 'not a zip at all']], /zip/i],
  ]
  for (const [what, parts, message] of cases) {
    const r = await post('/v1/skills', parts)
    t.equal(r.status, 400, what)
    t.match(r.json.error.message, message, what)
  }
  t.equal((await post('/v1/skills', [['display_title', undefined, 'nothing']])).status, 400, 'no bundle')
  t.equal((await skills.list({ limit: 100 } as any)).data.length, before, 'nothing stored')
})

t.test('titles are unique; a version must keep the name; unknown ids 404', async (t) => {
  const first = await skills.create({ files: await filesOf('titled'), display_name: 'Unique Title' } as any)
  const dup = await failure(skills.create({ files: await filesOf('titled'), display_name: 'unique title' } as any))
  t.equal(dup.status, 409)
  t.match(dup.error.error.message, /display_title/)
  const renamed = await failure(skills.versions.create(first.id, { files: await filesOf('renamed') }))
  t.equal(renamed.status, 400)
  t.match(renamed.error.error.message, /renamed.*titled/)
  t.equal((await failure(skills.retrieve('skill_01NOPE'))).status, 404)
  t.equal((await failure(skills.retrieve('agent_01NOPE'))).status, 404)
  t.equal((await failure(skills.versions.retrieve('01', { skill_id: first.id }))).status, 404, 'a version is a number without leading zeros')
  t.equal((await failure(skills.versions.retrieve('9', { skill_id: first.id }))).status, 404)
  // Deleted, its title is free again.
  await skills.versions.delete('1', { skill_id: first.id })
  await skills.delete(first.id)
  t.equal(((await skills.create({ files: await filesOf('titled'), display_name: 'Unique Title' } as any)) as any).display_title, 'Unique Title')
})

t.test('a create retried with its Idempotency-Key answers the same skill', async (t) => {
  const files = await filesOf('keyed')
  const headers = { 'Idempotency-Key': `k-${Date.now()}` }
  const a = await skills.create({ files } as any, { headers })
  const b = await skills.create({ files: await filesOf('keyed') } as any, { headers })
  t.equal(b.id, a.id)
  const reused = await failure(skills.create({ files: await filesOf('keyed', 'keyed', { 'keyed/x.txt': 'other' }) } as any, { headers }))
  t.equal(reused.status, 422)
  const r = await raw(s.url, 'GET', `/v1/skills/${a.id}/versions`, undefined, {})
  t.equal(r.json.data.length, 1, 'one version')
})
