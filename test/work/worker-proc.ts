// A worker as a user runs one, in a process of its own (so a test can SIGKILL it): the official client's
// `work.worker()` on one environment. Every heartbeat the server accepts is printed as a JSON line
// `{t, w, item, state, last_heartbeat, ttl_seconds}`, the evidence test/work/chaos.test.ts checks leases against.
// Its beats ask for a short lease (desired_ttl_seconds), so a killed worker's lease lapses in seconds.
// argv: <base URL> <environment id> <worker id> <workdir> <ttl seconds>
import Anthropic from '@anthropic-ai/sdk'

const [baseURL, environmentId, workerId, workdir, ttl] = process.argv.slice(2) as [string, string, string, string, string]
const out = (o: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(o)}\n`)

const beatFetch: typeof fetch = async (input, init) => {
  let url = String(input instanceof Request ? input.url : input)
  const beat = /\/work\/(work_[A-Za-z0-9]+)\/heartbeat/.exec(url)
  if (beat) url += `${url.includes('?') ? '&' : '?'}desired_ttl_seconds=${ttl}`
  const res = await fetch(url, init)
  if (beat && res.ok) out({ t: Date.now(), w: workerId, item: beat[1], ...((await res.clone().json()) as object) })
  return res
}

const client = new Anthropic({ baseURL, apiKey: 'any-key', maxRetries: 6, fetch: beatFetch })
await client.beta.environments.work.worker({ environmentId, environmentKey: 'any-key', workerId, workdir, maxIdleMs: 3000 } as any).run()
