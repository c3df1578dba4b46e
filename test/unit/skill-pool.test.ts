import { readdirSync, readFileSync } from 'node:fs'
import JSZip from 'jszip'
import t from 'tap'
import { validateBundle } from '../../gateway/skill-bundle.js'
import { SkillPool } from '../../gateway/skill-pool.js'

/**
 * The skill pool (gateway/skill-pool.ts) validates on its worker threads: the caller's buffers are moved there (they
 * are detached here, so this thread cannot have read them), and the verdict and canonical zip come back.
 */

const enc = (s: string) => new TextEncoder().encode(s)
const skillMd = '---\nname: my-skill\ndescription: Does useful things.\n---\nBody\n'

async function bundle(): Promise<Uint8Array> {
  const z = new JSZip()
  z.file('My_Skill/SKILL.md', skillMd)
  for (let i = 0; i < 50; i++) z.file(`My_Skill/ref/${i}.md`, `# ${i}\n${'text '.repeat(200)}`)
  return z.generateAsync({ type: 'uint8array', compression: 'DEFLATE' })
}

t.test('validates on a worker thread and moves the buffers both ways', async (t) => {
  const pool = new SkillPool({ threads: 1 })
  t.teardown(() => pool.close())
  const zip = await bundle()
  const expected = await validateBundle({ zip: new Uint8Array(zip) })
  const r = await pool.validate({ zip })
  t.equal(zip.byteLength, 0, 'the upload was moved to the worker: detached on this thread')
  t.ok(r.ok)
  if (!r.ok || !expected.ok) return
  t.equal(r.name, 'my-skill')
  t.equal(r.files, 51)
  t.ok(r.zip instanceof Uint8Array)
  t.ok(Buffer.from(r.zip).equals(Buffer.from(expected.zip)), 'the same canonical bytes as validating in place')
  const back = await JSZip.loadAsync(r.zip)
  t.equal(await back.file('my-skill/SKILL.md')!.async('string'), skillMd)
})

t.test('on Linux the workers run niced, this thread does not', { skip: process.platform !== 'linux' }, async (t) => {
  const pool = new SkillPool({ threads: 1, nice: 7 })
  t.teardown(() => pool.close())
  t.ok((await pool.validate({ zip: await bundle() })).ok)
  // Field 19 of /proc/<pid>/task/<tid>/stat is the thread's nice value; the worker is still alive (idle timeout).
  const niceOf = (tid: string) => {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8')
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16])
  }
  t.ok(readdirSync('/proc/self/task').map(niceOf).includes(7), 'a thread at nice 7: the worker')
  t.equal(niceOf(String(process.pid)), 0, 'the main thread at 0')
})

t.test('files are moved; a view of a larger buffer is copied and left alone', async (t) => {
  const pool = new SkillPool({ threads: 1 })
  t.teardown(() => pool.close())
  const md = enc(skillMd)
  const shared = enc('aaaabbbb')
  const a = shared.subarray(0, 4)
  const r = await pool.validate({
    files: [
      { path: 'my-skill/SKILL.md', bytes: md },
      { path: 'my-skill/a', bytes: a },
      { path: 'my-skill/b', bytes: shared.subarray(4) },
    ],
  })
  t.ok(r.ok)
  t.equal(md.byteLength, 0, 'a whole buffer was moved')
  t.equal(Buffer.from(a).toString(), 'aaaa', 'a view was copied')
  t.equal(shared.byteLength, 8)
})

t.test('refusals come back as values; concurrent bundles each get their own verdict', async (t) => {
  const pool = new SkillPool({ threads: 2 })
  t.teardown(() => pool.close())
  const refused = await pool.validate({ files: [{ path: 'my-skill/../SKILL.md', bytes: enc(skillMd) }] })
  t.same(refused.ok ? undefined : [refused.rule, refused.path], ['traversal', 'my-skill/../SKILL.md'])
  const results = await Promise.all(Array.from({ length: 6 }, async () => pool.validate({ zip: await bundle() })))
  t.same(
    results.map((r) => r.ok && r.files),
    Array(6).fill(51),
  )
})

t.test('close before any use starts nothing', async (t) => {
  await new SkillPool().close()
  t.pass()
})
