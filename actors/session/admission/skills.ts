import type { Logger } from 'pino'
import { fail, inField } from '../../../protocol/errors/fail.js'
import { SkillKind } from '../../../protocol/ops/skill.js'
import type { SkillParamsT, SkillRef } from '../../../protocol/schemas/agent.js'
import type { SessionCreateInput } from '../../../protocol/schemas/session.js'
import type { SessionAgent, ThreadAgent } from '../../../protocol/session.js'
import { SESSION_MAX_SKILL_EXPANDED_BYTES, SESSION_MAX_SKILLS } from '../../../protocol/skill-rules.js'
import type { ActorClient } from '../../kit/index.js'
import type { SessionSkill } from '../history/index.js'

/** Pins asked at once: a session of 500 skills pins them in about 32 round trips, not 500. */
const PIN_CONCURRENCY = 16

/** Skills one thread runs: the coordinator's (`member` none), or a roster member's. `field` names the list in errors. */
export interface SkillGroup {
  field: string
  member?: string
  wanted: readonly SkillParamsT[]
}

/**
 * The skill references a new session resolves (SPEC session create rule 4): its override's when it has one (unresolved:
 * `latest` or omitted become concrete now), else its agent's pins as stored; then each roster member's pins (other than
 * the coordinator's own `self` copy), which its threads run.
 */
export function requestedSkills(input: SessionCreateInput['agent'], agent: SessionAgent): SkillGroup[] {
  const own = typeof input !== 'string' && input.type === 'agent_with_overrides' && input.skills !== undefined ? (input.skills ?? []) : agent.skills
  const groups: SkillGroup[] = [{ field: 'agent.skills', wanted: own }]
  for (const { e, at } of members(agent)) {
    if (e.id !== agent.id && e.skills.length) groups.push({ field: `${at}.skills`, member: e.id, wanted: e.skills })
  }
  return groups.filter((g) => g.wanted.length)
}

/** The roster's members with where the snapshot holds each (a coordinator's `agents`, or predefined lists). */
function members(agent: SessionAgent): Array<{ e: ThreadAgent; at: string }> {
  const m = agent.multiagent
  if (!m) return []
  if (m.type === 'coordinator') {
    return m.agents.flatMap((e, i) => (e.type === 'agent' ? [{ e, at: `agent.multiagent.agents[${i}]` }] : []))
  }
  return (['subagents', 'workflows'] as const).flatMap((k) => {
    const list = m[k]
    return list.type === 'enabled' ? list.predefined_agents.map((e, i) => ({ e, at: `agent.multiagent.${k}.predefined_agents[${i}]` })) : []
  })
}

/**
 * Pins `wanted` for `session` (the skill kind's `pin`: a ready version, recorded as pinned by the session in the same
 * step, so a version's delete either sees the pin or runs first and the reference finds no version) and checks the
 * effective list: at most 500, 500 MB unpacked in all, names distinct (each is a directory under /workspace/skills).
 * A refusal takes back the pins it made. Errors name `agent.skills[i]`.
 */
export async function pinSessionSkills(client: ActorClient, session: string, groups: readonly SkillGroup[]): Promise<SessionSkill[]> {
  const count = groups.reduce((n, g) => n + g.wanted.length, 0)
  if (count > SESSION_MAX_SKILLS) throw fail('invalid_request', `agent.skills: a session runs at most ${SESSION_MAX_SKILLS} skills (got ${count})`)
  const all = groups.flatMap((g) => g.wanted.map((s, i) => ({ s, i, g })))
  for (const g of groups) {
    const seen = new Map<string, number>()
    g.wanted.forEach((s, i) => {
      if (s.type !== 'custom') throw fail('vendor_skills_unsupported', i)
      const j = seen.get(s.skill_id)
      if (j !== undefined) throw fail('invalid_request', `${g.field}[${i}].skill_id: ${s.skill_id} is listed twice (also at index ${j}); list each skill once`)
      seen.set(s.skill_id, i)
    })
  }
  const pinned: Array<SessionSkill | undefined> = new Array(all.length)
  try {
    for (let from = 0; from < all.length; from += PIN_CONCURRENCY) {
      await Promise.all(
        all.slice(from, from + PIN_CONCURRENCY).map(async ({ s, i, g }, k) => {
          const body = { by: session, ...(s.version === undefined ? {} : { version: s.version }) }
          const p = await client.call(SkillKind.ops.pin, { id: s.skill_id, body }).catch(inField(`${g.field}[${i}]`))
          const scope = g.member === undefined ? {} : { member: g.member, dir: `.agents/${g.member}/${p.name}` }
          pinned[from + k] = {
            skill_id: p.skill_id,
            version: p.version,
            name: p.name,
            description: p.description,
            object: p.object,
            expanded_bytes: p.expanded_bytes,
            ...scope,
          }
        }),
      )
    }
    const skills = pinned as SessionSkill[]
    // Names are directories: distinct within each thread's skills (members' live apart, beneath .agents/).
    const named = new Map<string, number>()
    let bytes = 0
    for (const [k, s] of skills.entries()) {
      const { i, g } = all[k]!
      const key = `${g.member ?? ''}/${s.name}`
      const j = named.get(key)
      if (j !== undefined) throw fail('skill_runtime_name_taken', `${g.field}[${i}]`, s.name, `${g.field}[${all[j]!.i}]`)
      named.set(key, k)
      bytes += s.expanded_bytes
    }
    if (bytes > SESSION_MAX_SKILL_EXPANDED_BYTES) throw fail('skills_too_large', bytes, SESSION_MAX_SKILL_EXPANDED_BYTES)
    return skills
  } catch (err) {
    await unpinSessionSkills(
      client,
      session,
      pinned.filter((s) => s !== undefined),
    )
    throw err
  }
}

/** The references a session's snapshot stores: concrete versions. */
export const skillRefs = (skills: readonly SessionSkill[]): SkillRef[] => skills.map((s) => ({ type: 'custom', skill_id: s.skill_id, version: s.version }))

/**
 * Takes back a session's pins (its create failed after pinning, or it was deleted). Best effort: a pin left behind is
 * found stale by the version's delete, which asks whether the session still exists.
 */
export async function unpinSessionSkills(
  client: ActorClient,
  session: string,
  skills: ReadonlyArray<Pick<SessionSkill, 'skill_id' | 'version'>>,
  log?: Logger,
): Promise<void> {
  for (let from = 0; from < skills.length; from += PIN_CONCURRENCY) {
    await Promise.all(
      skills.slice(from, from + PIN_CONCURRENCY).map((s) =>
        client.call(SkillKind.ops.unpin, { id: s.skill_id, body: { by: session, version: s.version } }).catch((err) => {
          log?.warn({ err, session, skill: s.skill_id, version: s.version }, 'a skill pin could not be taken back; the version delete finds it stale')
        }),
      ),
    )
  }
}
