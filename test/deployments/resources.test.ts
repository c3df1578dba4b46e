import { toFile } from '@anthropic-ai/sdk'
import t from 'tap'
import { isolatedOrSkip } from '../helpers/sandbox-backend.js'
import { deploy, deploymentStack, failure } from './_helpers.js'

// Deployments carry file resources (SPEC "Deployment": the same inputs as sessions'): the files are checked when the
// deployment names them, and each run's session makes its own copies. A file deleted since fails the run that needs it
// with `file_not_found_error`, and makes no session.

const s = await deploymentStack()
const deployments = s.client.beta.deployments
const files = s.client.beta.files
const UP = '/mnt/session/uploads'

const upload = async (text: string) => files.upload({ file: await toFile(Buffer.from(text), 'run.txt', { type: 'text/plain' }) })
const scoped = async (sessionId: string) => {
  const all = []
  for await (const f of files.list({ scope_id: sessionId } as any)) all.push(f)
  return all
}

t.test("each run's session copies the deployment's files", async (t) => {
  const f = await upload('for every run\n')
  const resources = [
    { type: 'file', file_id: f.id },
    { type: 'file', file_id: f.id, mount_path: `${UP}/named.txt` },
  ]
  const { deployment: d } = await deploy(s.client, { resources })
  t.same(d.resources, resources, 'the config, echoed as given')
  t.same((await deployments.retrieve(d.id)).resources, resources)

  const sessionsOf = []
  for (let i = 0; i < 2; i++) {
    const run = await deployments.run(d.id)
    t.equal(run.error, null)
    const session = await s.client.beta.sessions.retrieve(run.session_id!)
    t.match(session.resources, [
      { type: 'file', file_id: f.id, mount_path: `${UP}/${f.id}` },
      { type: 'file', file_id: f.id, mount_path: `${UP}/named.txt` },
    ])
    const copies = await scoped(session.id)
    t.equal(copies.length, 2, 'two copies for this session')
    t.notOk(
      copies.some((c) => c.id === f.id),
      'copies, not the original',
    )
    sessionsOf.push(session.id)
  }
  t.not(sessionsOf[0], sessionsOf[1])

  // The original deleted: the next run cannot copy it, and records why.
  await files.delete(f.id)
  const failed = await deployments.run(d.id)
  t.equal(failed.session_id, null)
  t.equal(failed.error?.type, 'file_not_found_error')
  t.match(failed.error?.message, /resources\[0\]\.file_id: File file_\w+ not found/)
  t.equal((await scoped(sessionsOf[0]!)).length, 2, "the earlier runs' sessions keep their copies")
})

t.test('the files a deployment names must exist, on create and on update', async (t) => {
  const missing = { type: 'file', file_id: 'file_01NOSUCHFILE' }
  const err = await failure(deploy(s.client, { resources: [missing] }))
  t.equal(err.status, 404)
  t.equal(err.errorCode, 'file_not_found')
  t.match(err.error.error.message, /^resources\[0\]\.file_id: File file_01NOSUCHFILE not found/)

  const { deployment: d } = await deploy(s.client)
  const upd = await failure(deployments.update(d.id, { resources: [missing] } as any))
  t.equal(upd.status, 404)
  t.match(upd.error.error.message, /^resources\[0\]\.file_id: /)
  const f = await upload('later')
  const updated = await deployments.update(d.id, { resources: [{ type: 'file', file_id: f.id, mount_path: `${UP}/a/b` }] } as any)
  t.same(updated.resources, [{ type: 'file', file_id: f.id, mount_path: `${UP}/a/b` }])
  const bad = await failure(deployments.update(d.id, { resources: [{ type: 'file', file_id: f.id, mount_path: '/etc/passwd' }] } as any))
  t.equal(bad.status, 400)
  t.match(bad.error.error.message, /^resources\[0\]\.mount_path must be an absolute path strictly beneath/)
})

t.test("a deployment's memory stores: checked when named, attached by each run's session; one archived since fails the run", isolatedOrSkip(), async (t) => {
  const stores = s.client.beta.memoryStores
  const store = await stores.create({ name: 'Run notes' })
  const resources = [{ type: 'memory_store', memory_store_id: store.id, access: 'read_only' }]
  const { deployment: d } = await deploy(s.client, { resources })
  t.same(d.resources, resources, 'the config, echoed as given')
  const run = await deployments.run(d.id)
  t.equal(run.error, null)
  const session = await s.client.beta.sessions.retrieve(run.session_id!)
  t.match(session.resources, [{ type: 'memory_store', memory_store_id: store.id, access: 'read_only', mount_path: '/mnt/memory/run-notes', name: 'Run notes' }])
  const listed = []
  for await (const x of s.client.beta.sessions.list({ memory_store_id: store.id } as any)) listed.push(x.id)
  t.same(listed, [session.id], "the run's session is listed by the store")

  // Archived: no new deployment may name it, and the next run fails saying why (a manual run pauses nothing).
  await stores.archive(store.id)
  const refused = await failure(deploy(s.client, { resources }))
  t.equal(refused.status, 400)
  t.match(refused.error.error.message, /^resources\[0\]\.memory_store_id: Memory store memstore_\w+ is archived/)
  const failed = await deployments.run(d.id)
  t.equal(failed.session_id, null)
  t.equal(failed.error?.type, 'memory_store_archived_error')
  t.match(failed.error?.message, /resources\[0\]\.memory_store_id: Memory store memstore_\w+ is archived/)

  const missing = await failure(
    deployments.update(d.id, { resources: [{ type: 'memory_store', memory_store_id: 'memstore_01JAAAAAAAAAAAAAAAAAAAAAAA' }] } as any),
  )
  t.equal(missing.status, 404)
  t.match(missing.error.error.message, /^resources\[0\]\.memory_store_id: Memory store memstore_01JAAAAAAAAAAAAAAAAAAAAAAA not found/)
  const nine = await failure(
    deployments.update(d.id, {
      resources: Array.from({ length: 9 }, (_, i) => ({ type: 'memory_store', memory_store_id: `memstore_01JAAAAAAAAAAAAAAAAAAAAAA${i}` })),
    } as any),
  )
  t.equal(nine.status, 400)
  t.match(nine.error.error.message, /^resources\[8\]: a session attaches at most 8 memory stores/)
})
