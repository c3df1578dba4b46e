import t from 'tap'
import { offeredNames, prefixedName } from '../../actors/session/turn/mcp-tools.js'

/** The names MCP tools are offered under (docs/ARCHITECTURE.md, "MCP toolsets"). */

t.test('a tool keeps its name unless another tool of the request has it or it is not a valid API name', async (t) => {
  const names = offeredNames(
    [
      { server: 'a', tool: 'search' },
      { server: 'b', tool: 'search' },
      { server: 'a', tool: 'read' },
      { server: 'a', tool: 'only_here' },
      { server: 'my server', tool: 'dotted.name' },
    ],
    new Set(['read', 'bash']),
  )
  t.same(names, ['a__search', 'b__search', 'a__read', 'only_here', 'my_server__dotted_name'])
})

t.test('a prefixed name that is taken too gets a number; the same input gives the same names', async (t) => {
  const entries = [
    { server: 'a', tool: 'x' },
    { server: 'a', tool: 'x' },
  ]
  const taken = new Set(['a__x'])
  t.same(offeredNames(entries, taken), ['a__x_2', 'a__x_3'])
  t.same(offeredNames(entries, taken), offeredNames(entries, taken))
})

t.test('long names are cut to 128 characters, a digest keeping them apart', async (t) => {
  const a = prefixedName('s'.repeat(200), 'one')
  const b = prefixedName('s'.repeat(200), 'two')
  t.equal(a.length, 128)
  t.equal(b.length, 128)
  t.not(a, b)
  t.match(a, /^[a-zA-Z0-9_-]+$/)
})
