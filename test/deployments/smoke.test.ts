import t from 'tap'
import { deploy, deploymentStack } from './_helpers.js'

const s = await deploymentStack()

t.test('create, get, run', async (t) => {
  const { agent, env, deployment: d } = await deploy(s.client, { schedule: { type: 'cron', expression: '*/5 * * * *', timezone: 'UTC' } })
  t.match(d.id, /^depl_/)
  t.same(d.agent, { type: 'agent', id: agent.id, version: 1 })
  t.equal(d.environment_id, env.id)
  t.equal(d.schedule?.upcoming_runs_at?.length, 5)
  const got = await s.client.beta.deployments.retrieve(d.id)
  t.same(got, d)
  const run = await s.client.beta.deployments.run(d.id)
  t.match(run.id, /^drun_/)
  t.match(run.session_id, /^sesn_/)
  t.equal(run.error, null)
  t.same(run.trigger_context, { type: 'manual' })
  const session = await s.client.beta.sessions.retrieve(run.session_id!)
  t.equal((session as any).deployment_id, d.id)
  t.same(await s.client.beta.deploymentRuns.retrieve(run.id), run)
})
