import { mkdtempSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import type Anthropic from '@anthropic-ai/sdk'
import { startFakeModelServer, type FakeModelServer } from '../fakes/model-server.js'
import { stack, type Stack } from '../helpers/stack.js'
import { clientFor } from '../helpers/troupe.js'

export interface SessionStack extends Stack {
  model: FakeModelServer
}

/** nats-server + `troupe serve` pointed at a fake Messages API, with fast retries and a temporary data dir. */
export async function sessionStack(env: Record<string, string> = {}): Promise<SessionStack> {
  const model = await startFakeModelServer()
  t.teardown(() => model.close())
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'troupe-data-'))
  const s = await stack({
    env: { TROUPE_MODEL_BASE_URL: model.url, ANTHROPIC_API_KEY: 'fake-key', TROUPE_MODEL_RETRY_BASE_MS: '20', TROUPE_DATA_DIR: dataDir, ...env },
  })
  // A lease renewal that misses on a loaded machine makes a partition answer 503 + retry-after-ms for a
  // moment; the official client retries that by itself, as users' clients do. 409s say x-should-retry: false.
  return { ...s, model, client: clientFor(s.url, { maxRetries: 3 }) }
}

export async function agentAndEnv(client: Anthropic, agent: Record<string, unknown> = {}, env: Record<string, unknown> = {}) {
  const a = await client.beta.agents.create({ name: 'tester', model: 'claude-sonnet-4-5', ...agent } as any)
  const e = await client.beta.environments.create({ name: 'env', ...env } as any)
  return { agent: a, env: e }
}

/** A session of a new agent (`agent`: its fields beside the defaults) in a new environment. */
export async function newSession(client: Anthropic, agent: Record<string, unknown> = {}) {
  const { agent: a, env: e } = await agentAndEnv(client, agent)
  return client.beta.sessions.create({ agent: a.id, environment_id: e.id } as any)
}

/** Sends `events` to session `id` with its stream open, and collects the stream until `until` (idle by default). */
export async function step(client: Anthropic, id: string, events: any[], until: (e: any, all: any[]) => boolean = isIdle, timeoutMs = 20_000) {
  const stream = await client.beta.sessions.events.stream(id)
  await client.beta.sessions.events.send(id, { events } as any)
  return collect(stream, until, timeoutMs)
}

/** Collects stream events until `until` says stop; returns them all. */
export async function collect(stream: AsyncIterable<any>, until: (e: any, all: any[]) => boolean, timeoutMs = 10_000): Promise<any[]> {
  const all: any[] = []
  const timer = setTimeout(() => (stream as any).controller?.abort?.(), timeoutMs)
  try {
    for await (const e of stream) {
      all.push(e)
      if (until(e, all)) break
    }
  } finally {
    clearTimeout(timer)
  }
  return all
}

/** Every stored event of a session, oldest first, through the client's paging. */
export async function history(client: Anthropic, id: string): Promise<any[]> {
  const all: any[] = []
  for await (const e of client.beta.sessions.events.list(id, { limit: 1000 } as any)) all.push(e)
  return all
}

export const isIdle = (e: any) => e.type === 'session.status_idle'

/**
 * One reader over a stream, for tests that wait for several points in turn (an SDK Stream can be iterated
 * only once): `next(until)` returns the events up to and including the first that satisfies `until`.
 */
export function reader(stream: AsyncIterable<any>) {
  const it = stream[Symbol.asyncIterator]()
  return {
    async next(until: (e: any) => boolean, timeoutMs = 20_000): Promise<any[]> {
      const got: any[] = []
      const deadline = Date.now() + timeoutMs
      for (;;) {
        const left = deadline - Date.now()
        const r = await Promise.race([
          it.next(),
          new Promise<never>((_, reject) =>
            setTimeout(
              () => reject(new Error(`no matching event within ${timeoutMs} ms; got ${got.map((e) => e.type).join(', ')}`)),
              Math.max(0, left),
            ).unref(),
          ),
        ])
        if (r.done) throw new Error(`stream ended; got ${got.map((e) => e.type).join(', ')}`)
        got.push(r.value)
        if (until(r.value)) return got
      }
    },
  }
}

export { failure } from '../agents/_util.js'

/** Asserts an API error: status, error.type, the field its message names, and the error code when given. */
export function isError(t: any, err: any, status: number, type: string, names: RegExp, code?: string) {
  t.equal(err?.status, status, `status ${status}: ${err?.message}`)
  t.equal(err?.error?.error?.type, type)
  t.match(err?.error?.error?.message ?? '', names, `message names ${names.source}`)
  if (code) t.equal(err?.errorCode, code, `error_code ${code}`)
}

export { until } from '../helpers/wait.js'
