import t from 'tap'
import '../helpers/keepalive.js'
import { runApiKeyFuzz } from './api-keys.js'

// A short, fixed run of the API key part of `npm run fuzz`: every credential case over the route table.
const SEED = 1
const REQUESTS = 300

t.test(`api key fuzz: seed ${SEED}, ${REQUESTS} requests`, async (t) => {
  const result = await runApiKeyFuzz({ seed: SEED, requests: REQUESTS, concurrency: 8, log: (l) => t.comment(l) })
  t.comment(
    [...result.counts]
      .sort()
      .map(([k, n]) => `${n} × ${k}`)
      .join('\n'),
  )
  for (const f of result.failures.slice(0, 20)) t.fail(f)
  t.ok(result.ok, `no failures in ${REQUESTS} requests`)
  // Every kind of refusal came up (the run means nothing if a case never did).
  for (const label of ['forged', 'truncated', 'revoked', 'expired', 'rotated away', 'read-only', 'full', 'admin'])
    t.ok(
      [...result.counts.keys()].some((k) => k.startsWith(`${label} (`)),
      `${label} keys were sent`,
    )
})
