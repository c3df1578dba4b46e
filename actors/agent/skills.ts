import { fail } from '../../protocol/errors/fail.js'
import type { SkillParamsT, SkillRef } from '../../protocol/schemas/agent.js'

/**
 * Resolves an agent's skill references to concrete, immutable versions (SPEC Versioning rule 5). Called
 * only when a write supplies `skills`; an update that leaves `skills` out keeps the stored pins as they are.
 */
export type SkillResolver = (skills: SkillParamsT[]) => Promise<SkillRef[]>

/**
 * Until skills storage exists: vendor-managed references are never supported (SPEC: 422), and custom ones
 * cannot be resolved yet (422 as well, like every skills route without configured storage).
 */
export const skillsUnavailable: SkillResolver = async (skills) => {
  skills.forEach((s, i) => {
    if (s.type === 'anthropic') throw fail('vendor_skills_unsupported', i)
  })
  if (skills.length > 0) throw fail('skills_unavailable')
  return []
}
