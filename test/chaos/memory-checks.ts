// What the memory churn's writes (memories.ts) must show in the stores at the end, a pure function of what was
// recorded and read back. Every write's content is its own, so its versions are those carrying its `content_sha256`.
import type { MemoryData, MemWrite, VersionRead } from './memories.js'

export interface MemoryProblems {
  /** (1) every acknowledged write one version, an unknown one at most one, a refused one none; nothing else stored. */
  versions: string[]
  /** (2) each memory's current state is its latest version. */
  current: string[]
  /** (3) no precondition won twice; a winner's version follows the version it required. */
  preconditions: string[]
  /** Versions by the writer that made them: `session_actor` with the session's id, `api_actor` for the API's. */
  actors: string[]
}

const short = (sha: string | null | undefined) => (sha ? sha.slice(0, 12) : String(sha))
const what = (w: MemWrite) => `${w.kind} ${w.tag} (${w.outcome}${w.why ? `: ${w.why}` : ''}) of ${w.path} in ${w.store}`

export function memoryProblems(d: MemoryData): MemoryProblems {
  const p: MemoryProblems = { versions: [], current: [], preconditions: [], actors: [] }
  p.versions.push(...d.readErrors.map((e) => `not read back: ${e}`))
  const bySha = new Map<string, VersionRead[]>()
  for (const v of d.versions) if (v.sha) bySha.set(v.sha, [...(bySha.get(v.sha) ?? []), v])
  const written = new Map(d.writes.map((w) => [w.sha, w]))

  for (const w of d.writes) {
    const vs = bySha.get(w.sha) ?? []
    const ok = w.outcome === 'acknowledged' ? vs.length === 1 : w.outcome === 'refused' ? vs.length === 0 : vs.length <= 1
    if (!ok)
      p.versions.push(`${what(w)}: ${vs.length} versions${vs.length ? ` (${vs.map((v) => `${v.id} of ${v.memory_id} at ${v.created_at}`).join(', ')})` : ''}`)
    for (const v of vs) {
      if (w.memoryId && v.memory_id !== w.memoryId) p.versions.push(`${what(w)}: its version ${v.id} is of ${v.memory_id}, not ${w.memoryId}`)
      if (v.store !== w.store || v.path !== w.path) p.versions.push(`${what(w)}: its version ${v.id} is at ${v.path} in ${v.store}`)
      const by = v.created_by
      const right = w.kind === 'session' ? by?.type === 'session_actor' && by.session_id === w.session : by?.type === 'api_actor'
      if (!right) p.actors.push(`${what(w)}: version ${v.id} created_by ${JSON.stringify(by)}`)
    }
  }
  for (const v of d.versions) {
    if (v.operation === 'deleted') p.versions.push(`version ${v.id} deleted ${v.memory_id} (${v.path}), which no writer did`)
    else if (!v.sha || !written.has(v.sha))
      p.versions.push(`version ${v.id} of ${v.memory_id} (${v.operation} ${v.path}) holds content no writer wrote (${short(v.sha)})`)
  }

  // The list gives each memory's versions newest first.
  const byMemory = new Map<string, VersionRead[]>()
  for (const v of d.versions) byMemory.set(v.memory_id, [...(byMemory.get(v.memory_id) ?? []), v])
  const listed = new Set(d.memories.map((m) => m.id))
  for (const m of d.memories) {
    const vs = byMemory.get(m.id) ?? []
    const latest = vs[0]
    if (!latest) p.current.push(`${m.id} (${m.path}): no version listed`)
    else if (latest.id !== m.versionId || latest.sha !== m.sha) {
      const cur = vs.find((v) => v.id === m.versionId)
      p.current.push(
        `${m.id} (${m.path}): current ${m.versionId} ${short(m.sha)}${cur ? ` created ${cur.created_at}` : ' (not listed)'}, ` +
          `latest listed ${latest.id} ${short(latest.sha)} created ${latest.created_at}${cur?.created_at === latest.created_at ? ' (the same millisecond: listed by id)' : ''}`,
      )
    }
  }
  for (const [id, vs] of byMemory) if (!listed.has(id) && vs[0]?.operation !== 'deleted') p.current.push(`${id}: versions listed but the memory is not`)

  const pairs = new Map<number, MemWrite[]>()
  for (const w of d.writes) if (w.kind === 'race') pairs.set(w.pair!, [...(pairs.get(w.pair!) ?? []), w])
  const winsByBase = new Map<string, MemWrite[]>()
  for (const ws of pairs.values()) {
    if (ws.filter((w) => w.outcome === 'acknowledged').length > 1)
      p.preconditions.push(`pair ${ws[0]!.pair}: both updates requiring ${short(ws[0]!.base)} acknowledged`)
    for (const w of ws) {
      const v = bySha.get(w.sha)?.[0]
      if (!v) continue
      winsByBase.set(w.base!, [...(winsByBase.get(w.base!) ?? []), w])
      const history = byMemory.get(v.memory_id) ?? []
      const before = history[history.indexOf(v) + 1]
      if (before?.sha !== w.base)
        p.preconditions.push(
          `${what(w)}: its version ${v.id} follows ${before ? `${before.id} ${short(before.sha)}` : 'nothing'}, not the ${short(w.base)} it required`,
        )
    }
  }
  for (const [base, ws] of winsByBase) if (ws.length > 1) p.preconditions.push(`${short(base)} won by ${ws.length} updates: ${ws.map((w) => w.tag).join(', ')}`)
  return p
}
