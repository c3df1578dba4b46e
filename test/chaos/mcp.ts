// MCP sessions under faults (issue 43 point 7): sessions whose agent calls the tools of an MCP server run here (the SDK
// server of test/fakes/mcp-server.ts, on loopback, which the hosts allow with TROUPE_MCP_ALLOW_HOSTS), turn after turn
// through the faults: an `echo` of a unique tag, and now and then a `sleep` long enough to be in flight when a host
// dies. The server forgets its MCP sessions every so often, as a restarted server would. The server records every call
// with its arguments, so the end can say that no call ran twice (a call whose host died is answered as not run, never
// repeated) and that no session is stuck on a dead connection (each takes one more turn whose call succeeds).
import type Anthropic from '@anthropic-ai/sdk'
import { type FakeMcpServer, startFakeMcpServer } from '../fakes/mcp-server.js'
import { oneTurn } from './turn.js'

/** The churn's client name (its own retries and timeouts). */
export const MCP_CLIENT = 'mcp'

const SESSIONS = 3
/** Every this many turns of a session, one is a `sleep` of SLEEP_MS instead of an `echo`. */
const SLEEP_EVERY = 3
const SLEEP_MS = 1500
const TURN_MS = 40_000
/** How often the server forgets its MCP sessions (the next request of each connection is answered 404). */
const FORGET_EVERY_MS = 20_000
const SETTLE_MS = 60_000

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export interface McpTurn {
  session: string
  tag: string
  tool: 'echo' | 'sleep'
  outcome: 'done' | 'unknown'
  why?: string
}

export interface McpData {
  sessions: string[]
  turns: McpTurn[]
  /** The tags of the calls the server ran, in order (a tag twice is a call run twice). */
  calls: string[]
  /** Each session's MCP tool uses and their results, read at the end. */
  uses: Array<{ session: string; id: string; tag: string; results: Array<{ isError: boolean; text: string }> }>
  /** Sessions not idle at the settle, or whose last turn (one more echo) did not succeed. */
  stuck: string[]
  forgets: number
}

const tagOf = (args: Record<string, unknown> | undefined) => String(args?.text ?? args?.tag ?? '')

export class McpChurn {
  /** What the hosts need to reach the server. */
  static readonly hostEnv = { TROUPE_MCP_ALLOW_HOSTS: '127.0.0.1' }
  private server!: FakeMcpServer
  private sessions: string[] = []
  private runId = ''
  readonly turns: McpTurn[] = []
  private forgets = 0

  constructor(private readonly client: Anthropic) {}

  get sessionIds(): readonly string[] {
    return this.sessions
  }

  async start(environmentId: string, runId: string): Promise<void> {
    this.runId = runId
    this.server = await startFakeMcpServer()
    const agent = await this.client.beta.agents.create({
      name: 'chaos mcp',
      model: 'claude-sonnet-4-5',
      mcp_servers: [{ type: 'url', name: 'chaos', url: this.server.url }],
      tools: [{ type: 'mcp_toolset', mcp_server_name: 'chaos', default_config: { permission_policy: { type: 'always_allow' } } }],
    } as any)
    for (let i = 0; i < SESSIONS; i++) {
      const s = await this.client.beta.sessions.create({ agent: agent.id, environment_id: environmentId } as any)
      this.sessions.push(s.id)
    }
  }

  async run(endAt: number): Promise<void> {
    const forgetting = (async () => {
      while (Date.now() + FORGET_EVERY_MS < endAt) {
        await sleep(FORGET_EVERY_MS)
        this.server.forgetSessions()
        this.forgets++
      }
    })()
    await Promise.all([...this.sessions.map((s, i) => this.driver(s, i, endAt)), forgetting])
  }

  private async driver(session: string, i: number, endAt: number): Promise<void> {
    for (let n = 0; Date.now() < endAt; n++) {
      const tag = `${this.runId}-m${i}-${n}`
      const tool = n % SLEEP_EVERY === SLEEP_EVERY - 1 ? 'sleep' : 'echo'
      const turn: McpTurn = { session, tag, tool, outcome: 'unknown' }
      this.turns.push(turn)
      Object.assign(
        turn,
        outcomeOf(await oneTurn(this.client, session, `${tool === 'sleep' ? 'mcp-sleep' : 'mcp'} ${tag} ${SLEEP_MS}`, TURN_MS, `mcp-${tag}`), tag),
      )
      if (turn.outcome === 'unknown') await sleep(1000)
    }
  }

  /** Waits for the sessions to be idle, gives each one more turn, then reads their MCP uses and results. */
  async settle(client: Anthropic, say: (s: string) => void): Promise<McpData> {
    const stuck: string[] = []
    const by = Date.now() + SETTLE_MS
    for (const s of this.sessions) {
      let status = 'unknown'
      while (Date.now() < by) {
        status = await client.beta.sessions.retrieve(s).then(
          (x) => x.status,
          () => 'unreachable',
        )
        if (status === 'idle') break
        await sleep(1000)
      }
      if (status !== 'idle') stuck.push(`${s}: ${status} ${SETTLE_MS / 1000} s after the load`)
    }
    for (const [i, s] of this.sessions.entries()) {
      const tag = `${this.runId}-final-${i}`
      const out = outcomeOf(await oneTurn(client, s, `mcp ${tag}`, TURN_MS, `mcp-${tag}`), tag)
      this.turns.push({ session: s, tag, tool: 'echo', ...out })
      if (out.outcome !== 'done') stuck.push(`${s}: its last turn did not succeed (${out.why})`)
    }
    const uses: McpData['uses'] = []
    for (const s of this.sessions) {
      const events: any[] = []
      try {
        for await (const e of client.beta.sessions.events.list(s, { limit: 1000 } as any)) events.push(e)
      } catch (err) {
        stuck.push(`${s}: its history could not be read (${(err as Error).message})`)
      }
      for (const u of events.filter((e) => e.type === 'agent.mcp_tool_use')) {
        const results = events
          .filter((e) => e.type === 'agent.mcp_tool_result' && e.mcp_tool_use_id === u.id)
          .map((r) => ({ isError: !!r.is_error, text: (r.content ?? []).map((c: { text?: string }) => c.text ?? '').join('\n') }))
        uses.push({ session: s, id: u.id, tag: tagOf(u.input), results })
      }
    }
    const d: McpData = { sessions: this.sessions, turns: this.turns, calls: this.server.calls.map((c) => tagOf(c.args)), uses, stuck, forgets: this.forgets }
    await this.server.close()
    say(`mcp: ${mcpSummary(d)}`)
    return d
  }
}

/** A turn's outcome: done when its call's result came back ok. */
function outcomeOf(out: Awaited<ReturnType<typeof oneTurn>>, tag: string): { outcome: McpTurn['outcome']; why?: string } {
  if ('error' in out) return { outcome: 'unknown', why: out.error }
  const use = out.events.find((e) => e.type === 'agent.mcp_tool_use' && tagOf(e.input) === tag)
  const result = use && out.events.find((e) => e.type === 'agent.mcp_tool_result' && e.mcp_tool_use_id === use.id)
  if (!result) return { outcome: 'unknown', why: use ? 'no result in the turn' : 'no MCP tool use in the turn' }
  return result.is_error ? { outcome: 'unknown', why: `error result: ${JSON.stringify(result.content).slice(0, 160)}` } : { outcome: 'done' }
}

export function mcpSummary(d: McpData): string {
  const done = d.turns.filter((t) => t.outcome === 'done').length
  return `${d.sessions.length} sessions, ${done} of ${d.turns.length} turns done, ${d.calls.length} calls, ${d.uses.length} uses, the server forgot its sessions ${d.forgets} times`
}

/** What the MCP sessions must show (run by checks.ts). */
export function mcpProblems(d: McpData): { twice: string[]; results: string[]; stuck: string[] } {
  const calls = new Map<string, number>()
  for (const tag of d.calls) calls.set(tag, (calls.get(tag) ?? 0) + 1)
  const twice = [...calls].filter(([, n]) => n > 1).map(([tag, n]) => `${tag}: called ${n} times`)
  const results: string[] = []
  const used = new Set(d.uses.map((u) => u.tag))
  for (const u of d.uses) {
    const n = calls.get(u.tag) ?? 0
    if (u.results.length !== 1) results.push(`${u.session} ${u.id} (${u.tag}): ${u.results.length} results`)
    else if (!u.results[0]!.isError && n !== 1) results.push(`${u.session} ${u.id} (${u.tag}): an ok result, ${n} calls on the server`)
  }
  // A call only once its intent is stored: every call the server ran is a use in a history.
  for (const tag of calls.keys()) if (!used.has(tag)) results.push(`${tag}: called on the server, no agent.mcp_tool_use stored`)
  return { twice, results, stuck: d.stuck }
}
