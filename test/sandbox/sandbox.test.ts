import t from 'tap'
import { BUILTIN_TOOL_NAMES, builtinToolDefinitions } from '../../sandbox/index.js'
import { sandboxFor, text } from './_helpers.js'

t.test('unknown tool is an error result', async (t) => {
  const { sb } = await sandboxFor(t)
  const r = await sb.run('web_fetch', { url: 'https://example.com' })
  t.equal(r.is_error, true)
  t.match(text(r), /Unknown tool "web_fetch"/)
})

t.test('bad input shapes never throw', async (t) => {
  const { sb } = await sandboxFor(t)
  for (const name of BUILTIN_TOOL_NAMES) {
    for (const input of [null, undefined, 'str', 42, [], { file_path: 1, pattern: 1, command: 1 }]) {
      const r = await sb.run(name, input)
      t.equal(r.is_error, true, `${name} ${JSON.stringify(input)}`)
      t.match(text(r), new RegExp(`Invalid input for ${name}`))
    }
  }
})

t.test('the workdir is created if missing', async (t) => {
  const { dir } = await sandboxFor(t)
  const { createHostSandbox } = await import('../../sandbox/index.js')
  const nested = `${dir}/not/yet/there`
  const sb = createHostSandbox({ workdir: nested })
  t.teardown(() => sb.close())
  const r = await sb.run('bash', { command: 'pwd' })
  t.match(text(r), /not\/yet\/there$/)
})

t.test('shell env does not inherit server secrets by default, and env option replaces it', async (t) => {
  process.env.TROUPE_TEST_SECRET = 'hunter2'
  t.teardown(() => {
    delete process.env.TROUPE_TEST_SECRET
  })
  const { sb } = await sandboxFor(t)
  t.equal(text(await sb.run('bash', { command: 'echo "[${TROUPE_TEST_SECRET:-}]"' })), '[]')

  const custom = await sandboxFor(t, { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', MY_VAR: 'v' } })
  t.equal(text(await custom.sb.run('bash', { command: 'echo "$MY_VAR"' })), 'v')
})

t.test('builtinToolDefinitions', async (t) => {
  const all = builtinToolDefinitions(BUILTIN_TOOL_NAMES)
  t.same(
    all.map((d) => d.name),
    ['bash', 'read', 'write', 'edit', 'glob', 'grep'],
  )
  for (const d of all) {
    t.ok(d.description.length > 20, `${d.name} has a description`)
    t.equal((d.input_schema as { type: string }).type, 'object')
  }
  t.same(
    builtinToolDefinitions(['grep', 'web_search', 'read', 'grep']).map((d) => d.name),
    ['grep', 'read'],
  )
  const read = builtinToolDefinitions(['read'])[0]!
  t.same((read.input_schema as { required: string[] }).required, ['file_path'])
  // Returned objects are copies.
  ;(read.input_schema as { required: string[] }).required.push('x')
  t.same((builtinToolDefinitions(['read'])[0]!.input_schema as { required: string[] }).required, ['file_path'])
})
