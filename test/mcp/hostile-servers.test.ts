import t from 'tap'
import '../helpers/keepalive.js'
import { runMcpServerFuzz } from '../fuzz/mcp-servers.js'

// The hostile MCP servers of `npm run fuzz` in the suite (issue 43 point 7): huge and endless tool lists, schemas the
// protocol or the Messages API would refuse, servers that never answer, lie about ids and shapes, send garbage, more
// bytes than a response may carry, error pages, redirects to the metadata address: each a clear error, no stuck turn.

t.test('hostile MCP servers: a clear error each, never a stuck turn', async (t) => {
  const lines: string[] = []
  const result = await runMcpServerFuzz((l) => lines.push(l))
  t.comment(result.text)
  for (const f of result.failures) t.fail(f)
  t.ok(result.ok, result.text.split('\n')[0])
})
