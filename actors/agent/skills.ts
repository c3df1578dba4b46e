import { fail, inField } from '../../protocol/errors/fail.js'
import { SkillKind } from '../../protocol/ops/skill.js'
import type { SkillParamsT, SkillRef } from '../../protocol/schemas/agent.js'
import type { ActorClient } from '../kit/index.js'

/**
 * Resolves an agent's skill references to concrete, immutable versions (SPEC Versioning rule 5), pinned by `by` (the
 * agent). Called only when a write supplies `skills`; an update that leaves `skills` out keeps the stored pins as they
 * are.
 */
export type SkillResolver = (skills: SkillParamsT[], by: string) => Promise<SkillRef[]>

/**
 * Through the skill kind's `pin` (a ready version, recorded as pinned in the same step): `latest` or omitted becomes
 * the newest ready version; a missing skill or version is a 404 naming the reference. Vendor-managed references are
 * never supported (SPEC: 422); a skill listed twice is refused.
 */
export const skillResolver =
  (client: ActorClient): SkillResolver =>
  async (skills, by) => {
    const seen = new Set<string>()
    skills.forEach((s, i) => {
      if (s.type === 'anthropic') throw fail('vendor_skills_unsupported', i)
      if (seen.has(s.skill_id)) throw fail('invalid_request', `skills[${i}].skill_id: ${s.skill_id} is listed twice; list each skill once`)
      seen.add(s.skill_id)
    })
    const out: SkillRef[] = []
    for (const [i, s] of skills.entries()) {
      const body = { by, ...(s.version === undefined ? {} : { version: s.version }) }
      const p = await client.call(SkillKind.ops.pin, { id: s.skill_id, body }).catch(inField(`skills[${i}]`))
      out.push({ type: 'custom', skill_id: p.skill_id, version: p.version })
    }
    return out
  }
