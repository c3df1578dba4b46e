// A worker as a user runs one, in a process of its own (so a test can SIGKILL it): the official client's
// `work.worker()` on one environment. Every heartbeat the server accepts is printed as a JSON line
// `{t, w, item, state, last_heartbeat, ttl_seconds}`, the evidence test/work/chaos.test.ts and the chaos run
// (test/chaos/workers.ts) check leases against. Its beats ask for a short lease (desired_ttl_seconds), so a killed
// worker's lease lapses in seconds.
// argv: <base URL | @file> <environment id> <worker id> <workdir> <ttl seconds>
// With `@file`, the file lists the gateways' URLs one a line (the chaos run rewrites it as hosts die and come back on
// new ports): every request goes to one of them, and to the next once a request finds none answering there.
import { readFileSync } from 'node:fs'
import Anthropic from '@anthropic-ai/sdk'

const [base, environmentId, workerId, workdir, ttl] = process.argv.slice(2) as [string, string, string, string, string]
const out = (o: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(o)}\n`)
const ORIGIN = 'http://troupe.workers.invalid'
let pick = [...workerId].reduce((n, ch) => n + ch.charCodeAt(0), 0)

/** The gateway a request goes to: the fixed URL, or one of the file's (re-read every time, it is a few lines). */
function gateway(): string {
  if (!base.startsWith('@')) return base
  let urls: string[] = []
  try {
    urls = readFileSync(base.slice(1), 'utf8').split('\n').filter(Boolean)
  } catch {
    // Being rewritten: the origin below refuses, and the client retries.
  }
  return urls.length ? urls[pick % urls.length]! : 'http://127.0.0.1:9'
}

const beatFetch: typeof fetch = async (input, init) => {
  let url = String(input instanceof Request ? input.url : input)
  if (url.startsWith(ORIGIN)) url = gateway() + url.slice(ORIGIN.length)
  const beat = /\/work\/(work_[A-Za-z0-9]+)\/heartbeat/.exec(url)
  if (beat) url += `${url.includes('?') ? '&' : '?'}desired_ttl_seconds=${ttl}`
  let res: Response
  try {
    res = await fetch(url, init)
  } catch (err) {
    pick++
    throw err
  }
  if (beat && res.ok) out({ t: Date.now(), w: workerId, item: beat[1], ...((await res.clone().json()) as object) })
  return res
}

const baseURL = base.startsWith('@') ? ORIGIN : base
// A request to a paused host gives up in time (and the client retries elsewhere); long polls last under a second.
const client = new Anthropic({ baseURL, apiKey: 'any-key', maxRetries: 6, timeout: 15_000, fetch: beatFetch })
await client.beta.environments.work.worker({ environmentId, environmentKey: 'any-key', workerId, workdir, maxIdleMs: 3000 } as any).run()
