// A session taken over from a SIGKILLed host gets a working sandbox on its new host, with its workspace: probe
// sessions, apart from the load, each leave a token in their workspace at the start (a file in a directory, mode 640,
// and a link to it); at each host SIGKILL, those the host held read it back through the link while the host is still
// down, so on a host that took them over. At a sandbox host SIGKILL (`--sandbox-hosts`), those whose sandbox ran there
// read it back while it is down, so in a sandbox on another sandbox host, the workspace restored there.
import type Anthropic from '@anthropic-ai/sdk'
import { oneTurn, toolResults } from './turn.js'

export interface ProbeCheck {
  session: string
  /** What was killed: a serve host (the session's actor moved) or the sandbox host running its sandbox. */
  kind: 'host' | 'sandbox-host'
  /** The killed host (name). */
  victim: string
  /** The host that held the session when it read its token back (id), and the victim's id. */
  owner?: string
  victimId: string
  ok: boolean
  /** The result said the session moved (its workspace was restored from the store on a host that did not hold it). */
  restored: boolean
  attempts: number
  detail: string
  /** Why the first attempt failed, when a later one succeeded. */
  firstFailure?: string
}

/** How long a probe session may take to be served by another host after the kill. */
const TAKEOVER_BOUND_MS = 15_000
const MOVED = /\[workspace\] This session moved to another host/
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export class WorkspaceProbes {
  readonly checks: ProbeCheck[] = []
  /** Each probe session's token; a session whose write failed has none and is not probed. */
  private readonly tokens = new Map<string, string>()

  constructor(
    private readonly client: Anthropic,
    private readonly ownerOf: (session: string) => Promise<string | undefined>,
  ) {}

  /** Creates `n` probe sessions and has each leave its token in its workspace; the ones that did. */
  async setup(agent: string, environment: string, n: number, runId: string): Promise<number> {
    await Promise.all(
      Array.from({ length: n }, async (_, i) => {
        const s = await this.client.beta.sessions.create({ agent, environment_id: environment } as any)
        const token = `${runId}-probe${i}`
        // Twice at most: a first tool may be refused under load (a session's first sandbox, a busy machine).
        for (let attempt = 0; attempt < 2 && !this.tokens.has(s.id); attempt++) {
          const turn = await oneTurn(this.client, s.id, `probe-write ${token}`)
          if ('events' in turn && toolResults(turn.events)[0]?.text.includes('wrote')) this.tokens.set(s.id, token)
        }
      }),
    )
    return this.tokens.size
  }

  /** The probe sessions `host` (id) holds now. */
  async heldBy(host: string): Promise<string[]> {
    const owners = await Promise.all([...this.tokens.keys()].map(async (s) => [s, await this.ownerOf(s).catch(() => undefined)] as const))
    return owners.filter(([, o]) => o === host).map(([s]) => s)
  }

  /** Of `sessions`, the probe sessions (those that left a token). */
  among(sessions: Iterable<string | undefined>): string[] {
    return [...new Set(sessions)].filter((s): s is string => !!s && this.tokens.has(s))
  }

  /**
   * After `victim` was killed, while it is down: each of `sessions` reads its token back once another host serves it
   * (a sandbox host's sessions keep their serve host: they read at once). A result cut short by one more move is
   * tried again (twice at most).
   */
  async check(victim: { name: string; id: string }, sessions: string[], kind: ProbeCheck['kind'] = 'host'): Promise<void> {
    await Promise.all(
      sessions.map(async (session) => {
        const rec: ProbeCheck = { session, kind, victim: victim.name, victimId: victim.id, ok: false, restored: false, attempts: 0, detail: '' }
        this.checks.push(rec)
        const by = Date.now() + TAKEOVER_BOUND_MS
        while (kind === 'host' && Date.now() < by && [victim.id, undefined].includes(await this.ownerOf(session).catch(() => undefined))) await sleep(100)
        let first: string | undefined
        for (; rec.attempts < 3 && !rec.ok; ) {
          rec.attempts++
          const turn = await oneTurn(this.client, session, 'probe-check')
          rec.owner = await this.ownerOf(session).catch(() => undefined)
          if ('error' in turn) {
            rec.detail = turn.error
            first ??= rec.detail
            continue
          }
          const [r] = toolResults(turn.events)
          rec.restored ||= !!r && MOVED.test(r.text)
          rec.ok = !!r && !r.isError && r.text.startsWith(`${this.tokens.get(session)}\n640`)
          rec.detail = r ? `${r.isError ? 'error: ' : ''}${r.text.slice(0, 200)}` : 'no tool result'
          if (!rec.ok) first ??= rec.detail
        }
        if (rec.ok && rec.attempts > 1) rec.firstFailure = first
      }),
    )
  }
}
