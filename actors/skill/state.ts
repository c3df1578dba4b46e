import type { Skill, SkillVersion } from '../../protocol/schemas/skill.js'

/**
 * How skills sit in their bucket and object store:
 *
 *   troupe_skills         skill.<id>     the skill's state (below), written only by the owner of its partition, fenced
 *                                        by its revision; a create (any host) is the one write that makes it
 *                         title.<hash>   the skill holding an explicit display_title (created by the skill's create,
 *                                        removed by its delete): what makes titles unique across hosts
 *   troupe_skill_bundles  <id>.<suffix>  one version's canonical zip, written whole by the gateway before the version is
 *                                        recorded; bytes no version names are swept (sweep.ts)
 */
export interface SkillState {
  skill: Skill
  /** The frontmatter name of its first version: every later version must carry it (it is their directory). */
  name: string
  /** Fingerprint of the create (the bundle's digest and title), when it carried an Idempotency-Key. */
  created_by?: string
  /** The number the next version gets: numbers are never reused, even once their version is deleted. */
  next: number
  /** Oldest first. */
  versions: StoredVersion[]
  /** The `title.` key this skill holds, when its title was supplied. */
  title_key?: string
  /**
   * Who pins which version: version → agent or session id → when it pinned (epoch ms). Recorded by `pin`; checked, and
   * pruned of pinners that no longer pin (an agent moved on or archived, a session deleted), by a version's delete.
   */
  pins?: Record<string, Record<string, number>>
}

export interface StoredVersion {
  version: SkillVersion
  /** The object in troupe_skill_bundles holding its canonical zip. */
  object: string
  size_bytes: number
  /** What its files take once unpacked (sessions' aggregate bound). */
  expanded_bytes: number
  files: number
  digest: string
  /** The Idempotency-Key of the upload that made it, hashed: a retry with the key answers this version. */
  key?: string
  /** Being deleted: hidden from every read; its bytes go, then the version (the kind's work, resumed after a crash). */
  deleting?: true
}

export const SKILL_PREFIX = 'skill.'

/** The versions a read may show: ready ones, not those being deleted. */
export const readyVersions = (s: SkillState): StoredVersion[] => s.versions.filter((v) => !v.deleting)

/** The skill as shown: its latest version is the newest ready one. */
export function skillView(s: SkillState): Skill {
  const latest = readyVersions(s).at(-1)?.version.version ?? null
  return { ...s.skill, latest_version: latest, latest_version_id: latest }
}

/** A skill as lists hold it: what they show, and the objects its versions name (what the sweep keeps). */
export interface ListedSkill {
  id: string
  created_at: string
  skill: Skill
  objects: string[]
}
