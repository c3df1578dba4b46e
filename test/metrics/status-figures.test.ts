import t from 'tap'
import { figures, metricsLines, samples } from '../../supervisor/inspect/status/metrics.js'

// `troupe status`'s metrics section without a cluster: what it reads of an exposition, and how it shows hosts that
// answered and one that did not. Against real hosts: test/metrics/status.test.ts.

const TEXT = `# HELP troupe_http_requests_total HTTP requests
# TYPE troupe_http_requests_total counter
troupe_http_requests_total{method="GET",route="/v1/agents/{agent_id}",status="200"} 7
troupe_http_requests_total{method="POST",route="/v1/sessions",status="503"} 2
troupe_http_requests_total{method="GET",route="unmatched",status="404"} 1
troupe_model_requests_total{model="claude \\"x\\"",outcome="ok"} 4
troupe_model_requests_total{model="claude \\"x\\"",outcome="error"} 1
troupe_tool_runs_total{tool="bash",outcome="ok"} 3
troupe_tool_runs_total{tool="mcp",outcome="failed"} 1
troupe_model_list_cost_usd_total{model="m"} 0.5
troupe_actors_live{kind="session"} 2
troupe_actors_live{kind="agent"} 3
troupe_sse_streams_open 1
`

t.test('the figures of one exposition', async (t) => {
  const s = samples(TEXT)
  t.same(s.find((x) => x.name === 'troupe_model_requests_total')?.labels, { model: 'claude "x"', outcome: 'ok' })
  t.match(figures(s), {
    requests: 10,
    errors_5xx: 2,
    model_requests: 5,
    model_errors: 1,
    tool_runs: 4,
    tool_errors: 1,
    list_cost_usd: 0.5,
    actors_live: 5,
    sse_open: 1,
    turns: 0,
  })
})

t.test('a host per line, one that did not answer said so, and the sums of those that did', async (t) => {
  const f = figures(samples(TEXT))
  const lines = metricsLines({
    hosts: [
      { id: 'host_A', url: 'http://a', ...f },
      { id: 'host_B', url: 'http://b', error: 'no answer in time', ...figures([]) },
    ],
    totals: f,
  })
  t.match(lines[1], /^ {2}host_A {2}requests 10 \(5xx 2\) {2}streams 1 {2}actors 5/)
  t.equal(lines[2], '  host_B  NO ANSWER: no answer in time')
  t.match(lines[3], /^ {2}cluster \(1 of 2 answered\) {2}requests 10/)
})
