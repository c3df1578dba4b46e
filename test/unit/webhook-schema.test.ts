import { type } from 'arktype'
import t from 'tap'
import { WebhookCreate, WebhookUpdate, webhookUrlProblem } from '../../protocol/schemas/webhook.js'

/** Webhook endpoint shapes (protocol/schemas/webhook.ts): every URL rule, the event list, an update's fields. */

t.test('each URL rule', async (t) => {
  const refused: Record<string, RegExp> = {
    'http://hooks.example.com/x': /must use https \(was http\)/,
    'ftp://hooks.example.com/x': /must use https/,
    'https://hooks.example.com:8443/x': /port 443 \(was 8443\)/,
    'https://hooks.example.com:80/x': /port 443 \(was 80\)/,
    'https://user:pw@hooks.example.com/x': /credentials/,
    'https://user@hooks.example.com/x': /credentials/,
    'https://hooks.example.com/x#frag': /fragment/,
    'https://hooks.example.com/x#': /fragment/,
    'https://203.0.113.7/x': /not an IP address/,
    'https://[2001:db8::1]/x': /not an IP address/,
    'https://0x7f.1/x': /not an IP address/,
    'https://2130706433/x': /not an IP address/,
    'https://localhost/x': /localhost/,
    'https://LOCALHOST/x': /localhost/,
    'https://api.localhost/x': /localhost/,
    'https://intranet/x': /fully qualified/,
    'not a url': /not an absolute URL/,
    '/relative/path': /not an absolute URL/,
  }
  for (const [url, why] of Object.entries(refused)) t.match(webhookUrlProblem(url), why, url)
  for (const url of ['https://hooks.example.com/x', 'https://hooks.example.com:443/a/b?c=d', 'https://xn--bcher-kva.example/x']) {
    t.equal(webhookUrlProblem(url), undefined, url)
  }
})

const problem = (schema: any, body: unknown) => {
  const out = schema(body)
  return out instanceof type.errors ? out.summary : undefined
}

t.test('create: a URL and at least one known event type, none twice, nothing else', async (t) => {
  t.equal(problem(WebhookCreate, { url: 'https://h.example.com/', event_types: ['session.status_idled'] }), undefined)
  t.match(problem(WebhookCreate, { url: 'https://h.example.com/', event_types: [] }), /event_types must be non-empty/)
  t.match(problem(WebhookCreate, { url: 'https://h.example.com/', event_types: ['session.exploded'] }), /event_types\[0\]/)
  t.match(
    problem(WebhookCreate, { url: 'https://h.example.com/', event_types: ['session.archived', 'session.archived'] }),
    /event_types\[1\] names session\.archived twice/,
  )
  t.match(problem(WebhookCreate, { url: 'http://h.example.com/', event_types: ['session.archived'] }), /url must use https/)
  t.match(problem(WebhookCreate, { event_types: ['session.archived'] }), /url must be/)
  t.match(problem(WebhookCreate, { url: 'https://h.example.com/', event_types: ['session.archived'], secret: 'x' }), /secret must be removed/)
  t.match(problem(WebhookCreate, { url: `https://h.example.com/${'a'.repeat(2100)}`, event_types: ['session.archived'] }), /url must be at most length 2048/)
})

t.test('update: url, event_types and status, at least one', async (t) => {
  t.equal(problem(WebhookUpdate, { status: 'disabled' }), undefined)
  t.equal(problem(WebhookUpdate, { url: 'https://h.example.com/', event_types: ['deployment_run.failed'], status: 'enabled' }), undefined)
  t.match(problem(WebhookUpdate, {}), /must name url, event_types or status/)
  t.match(problem(WebhookUpdate, { status: 'paused' }), /status must be/)
  t.match(problem(WebhookUpdate, { url: 'https://localhost/' }), /url must not name localhost/)
})
