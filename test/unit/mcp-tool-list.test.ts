import t from 'tap'
import { MAX_DESCRIPTION_CHARS, MAX_SCHEMA_DEPTH, MAX_SERVER_TOOLS, MAX_SERVER_TOOLS_BYTES, ToolList } from '../../actors/mcp/tool-list.js'

/** What of a hostile server's tool list is offered (actors/mcp/tool-list.ts): counts, bytes, schemas, descriptions. */

const schema = { type: 'object', properties: { q: { type: 'string' } } }

t.test('at most MAX_SERVER_TOOLS tools', async (t) => {
  const l = new ToolList()
  for (let i = 0; i < MAX_SERVER_TOOLS + 10; i++) l.add({ name: `t${i}`, inputSchema: schema })
  t.equal(l.tools.length, MAX_SERVER_TOOLS)
  t.equal(l.skipped, 10)
  t.ok(l.full)
})

t.test('at most MAX_SERVER_TOOLS_BYTES of definitions', async (t) => {
  const l = new ToolList()
  const big = { type: 'object', properties: { q: { type: 'string', description: 'x'.repeat(60_000) } } }
  for (let i = 0; i < 40; i++) l.add({ name: `t${i}`, inputSchema: big })
  t.equal(l.tools.length, Math.floor(MAX_SERVER_TOOLS_BYTES / (JSON.stringify(big).length + 2)))
  t.ok(l.full, 'full once a tool did not fit')
})

t.test('a schema too big or too deep, or a tool without a name, is left out; a long description is cut', async (t) => {
  const l = new ToolList()
  let deep: Record<string, unknown> = { type: 'string' }
  for (let i = 0; i < MAX_SCHEMA_DEPTH + 5; i++) deep = { type: 'object', properties: { a: deep } }
  l.add({ name: 'deep', inputSchema: deep })
  l.add({ name: 'huge', inputSchema: { type: 'object', description: 'x'.repeat(70_000) } })
  l.add({ name: '', inputSchema: schema })
  l.add({ name: 'wordy', description: 'w'.repeat(MAX_DESCRIPTION_CHARS + 500), inputSchema: schema })
  t.same(
    l.tools.map((x) => x.name),
    ['wordy'],
  )
  t.equal(l.tools[0]!.description!.length, MAX_DESCRIPTION_CHARS + 1)
  t.equal(l.skipped, 3)
})
