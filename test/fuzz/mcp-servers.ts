import { setTimeout as sleep } from 'node:timers/promises'
import { HOSTILE_MODES, type HostileMode, startHostileMcpServer } from '../fakes/hostile-mcp-server.js'
import { startFakeModelServer } from '../fakes/model-server.js'
import { startNats } from '../helpers/nats.js'
import { clientFor, startTroupe } from '../helpers/troupe.js'

/**
 * The hostile MCP servers part of `npm run fuzz` (issue 43 point 7): a session per hostile server
 * (test/fakes/hostile-mcp-server.ts), its model calling the server's `probe` tool, each misbehaviour answered by a
 * clear error (a `session.error` naming the server, or an error tool result) and never a stuck turn: every turn ends
 * idle, a call that never answers ends at the user's interrupt. At the end the server is alive and ready.
 */

export interface McpFuzzResult {
  ok: boolean
  failures: string[]
  text: string
}

/** What each hostile server must come to. */
interface Expect {
  /** The session.error the turn tells (its message matching), if any must be told. */
  error?: RegExp
  /** The probe's result is an error (true), succeeds (false), or is not checked (undefined: the tool may not be offered). */
  probeFails?: boolean
  /** How many of the server's tools the model is offered. */
  offered?: number
  /** The call never answers: the user interrupts it. */
  interrupt?: true
}

const EXPECT: Record<HostileMode, Expect> = {
  'many-tools': { probeFails: false, offered: 500 },
  'huge-list': { error: /over 16 MiB/ },
  'endless-pages': { probeFails: false, offered: 50 },
  'bad-shapes': { error: /does not follow the protocol \(tools\.1\.inputSchema: / },
  'odd-tools': { probeFails: false, offered: 5 },
  'slow-init': { error: /could not be reached/ },
  'slow-call': { interrupt: true },
  'wrong-id': { interrupt: true },
  garbage: { probeFails: true, error: /could not be reached/ },
  'shape-lie': { probeFails: true, error: /does not follow the protocol \(content: / },
  'oversize-result': { probeFails: true, error: /over 16 MiB/ },
  'flood-sse': { probeFails: true, error: /over 16 MiB/ },
  'html-500': { error: /could not be reached/ },
  redirect: { error: /could not be reached/ },
}

const API_NAME = /^[a-zA-Z0-9_-]{1,128}$/
/** Sessions run at once (most of a session's time is waiting on its hostile server). */
const AT_ONCE = 4

export async function runMcpServerFuzz(log: (line: string) => void = console.log): Promise<McpFuzzResult> {
  const failures: string[] = []
  const lines: string[] = []
  const nats = await startNats()
  const model = await startFakeModelServer()
  const hostile = await startHostileMcpServer()
  // The model calls `probe` on a user message and says "done" once it has a tool result.
  model.setHandler((req) => {
    const last = req.body?.messages?.at(-1)
    const answered = Array.isArray(last?.content) && last.content.some((b: { type: string }) => b.type === 'tool_result')
    return answered ? { steps: [{ type: 'text', text: 'done' }] } : { steps: [{ type: 'tool_use', name: 'probe', input: {} }] }
  })
  const troupe = await startTroupe({
    natsUrl: nats.url,
    env: { TROUPE_MODEL_BASE_URL: model.url, ANTHROPIC_API_KEY: 'k', TROUPE_MODEL_RETRY_BASE_MS: '20', TROUPE_MCP_ALLOW_HOSTS: '127.0.0.1' },
  })
  const client = clientFor(troupe.url, { maxRetries: 3 })
  const started = performance.now()
  try {
    const env = await client.beta.environments.create({ name: 'mcp-fuzz' } as any)
    const one = async (mode: HostileMode) => {
      const want = EXPECT[mode]
      const fail = (why: string) => failures.push(`${mode}: ${why}`)
      const agent = await client.beta.agents.create({
        name: `hostile ${mode}`,
        model: 'claude-sonnet-4-5',
        system: `hostile ${mode}`,
        mcp_servers: [{ type: 'url', name: mode, url: hostile.url(mode) }],
        tools: [{ type: 'mcp_toolset', mcp_server_name: mode, default_config: { permission_policy: { type: 'always_allow' } } }],
      } as any)
      const session = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id } as any)
      const t0 = performance.now()
      const stream = await client.beta.sessions.events.stream(session.id)
      await client.beta.sessions.events.send(session.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'probe it' }] }] } as any)
      const events: any[] = []
      let interrupted = false
      const deadline = setTimeout(() => stream.controller.abort(), 60_000)
      try {
        for await (const e of stream) {
          events.push(e)
          if (want.interrupt && !interrupted && e.type === 'agent.mcp_tool_use') {
            interrupted = true
            await sleep(500)
            await client.beta.sessions.events.send(session.id, { events: [{ type: 'user.interrupt' }] } as any)
          }
          if (e.type === 'session.status_idle') break
        }
      } catch {
        // Aborted at the deadline: told below.
      } finally {
        clearTimeout(deadline)
      }
      const ms = Math.round(performance.now() - t0)
      const idle = events.find((e) => e.type === 'session.status_idle')
      if (!idle) return fail(`no idle within 60 s (stuck); saw ${events.map((e) => e.type).join(', ')}`)
      const errors = events.filter((e) => e.type === 'session.error')
      const results = events.filter((e) => e.type === 'agent.mcp_tool_result' || e.type === 'agent.tool_result')
      const uses = events.filter((e) => e.type === 'agent.mcp_tool_use' || e.type === 'agent.tool_use')
      if (results.length < uses.length) fail(`${uses.length} tool uses, ${results.length} results`)
      if (want.error && !errors.some((e) => e.error?.mcp_server_name === mode && want.error!.test(e.error?.message ?? '')))
        fail(`no session.error naming it matching ${want.error}; got ${JSON.stringify(errors.map((e) => e.error)).slice(0, 400)}`)
      if (want.probeFails !== undefined) {
        const probe = events.find((e) => e.type === 'agent.mcp_tool_result')
        if (!probe) fail('the probe was not called through MCP')
        else if (probe.is_error !== want.probeFails) fail(`the probe's result is_error ${probe.is_error}: ${JSON.stringify(probe.content).slice(0, 200)}`)
      }
      if (want.interrupt && !interrupted) fail('the call never started, so nothing was interrupted')
      const long = errors.find((e) => (e.error?.message ?? '').length > 2000)
      if (long) fail(`a session.error message of ${long.error.message.length} characters`)
      const tooBig = results.find((r) => JSON.stringify(r.content ?? []).length > 250_000)
      if (tooBig) fail(`a tool result of ${JSON.stringify(tooBig.content).length} characters`)
      const request = [...model.requests].reverse().find((r) => JSON.stringify(r.body?.system ?? '').includes(`hostile ${mode}`))
      const offered: any[] = request?.body?.tools ?? []
      if (want.offered !== undefined && offered.length !== want.offered) fail(`${offered.length} tools offered, not ${want.offered}`)
      const badName = offered.find((x) => !API_NAME.test(x.name))
      if (badName) fail(`a tool offered under the name ${JSON.stringify(badName.name).slice(0, 80)}`)
      const said = errors[0]?.error?.message ?? (results[0]?.is_error ? JSON.stringify(results[0].content).slice(0, 160) : '')
      lines.push(`  ${mode.padEnd(16)} idle after ${String(ms).padStart(6)} ms; ${offered.length} tools offered; ${String(said).slice(0, 160)}`)
    }
    const queue = [...HOSTILE_MODES]
    await Promise.all(
      Array.from({ length: AT_ONCE }, async () => {
        for (let m = queue.shift(); m; m = queue.shift()) await one(m).catch((err) => failures.push(`${m}: ${(err as Error).message}`))
      }),
    )
    const ready = await fetch(`${troupe.url}/readyz`).then(
      (r) => r.status,
      () => 0,
    )
    if (ready !== 200) failures.push(`the server is not ready at the end (${ready})`)
    if (troupe.proc.exitCode !== null || troupe.proc.signalCode !== null) failures.push('the server died')
  } finally {
    await troupe.kill()
    await hostile.close()
    await model.close()
    await nats.stop()
  }
  const text = [
    `hostile MCP servers: ${HOSTILE_MODES.length} sessions in ${((performance.now() - started) / 1000).toFixed(1)} s, ${failures.length} failures`,
    ...lines.sort(),
    ...failures.map((f) => `  FAIL ${f}`),
  ].join('\n')
  log(text)
  return { ok: failures.length === 0, failures, text }
}
