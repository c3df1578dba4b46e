import { type } from 'arktype'
import { isUploadObjectOf } from '../files.js'
import { limitParam, pageParam } from './common.js'
import { AgentId, SessionId, SkillId } from './ids.js'
import { lazy } from './lazy.js'

/**
 * Skills on the wire (SPEC "Skill and skill version", "Skills"; WIRE §11; DECISIONS "Skills"). Versions are numbered
 * by the service, 1, 2, …, written as decimal strings: a version's `id` and `version`, the `{version}` path segment,
 * `latest_version`/`latest_version_id`, and agents' skill references.
 */

/** A skill as the API shows it: the client's fields (`display_name`, `latest_version_id`) and the spec's. */
export interface Skill {
  id: string
  type: 'skill'
  /** The title: the supplied `display_title`, else the frontmatter name of its first version. */
  display_title: string
  display_name: string
  /** The newest ready version ("1", "2", …); null once every version is deleted. */
  latest_version: string | null
  latest_version_id: string | null
  source: { type: 'custom' }
  created_at: string
  updated_at: string
}

/** One version as the API shows it. */
export interface SkillVersion {
  id: string
  type: 'skill_version'
  skill_id: string
  version: string
  /** The frontmatter name: the top-level directory the bundle is re-rooted under. */
  name: string
  description: string
  created_at: string
}

/** The `{version}` path segment: a version number as a decimal string, without leading zeros. */
export const isVersionNumber = (s: string): boolean => /^[1-9][0-9]{0,9}$/.test(s)

/** The longest `display_title`. */
export const DISPLAY_TITLE_MAX = 255

export const DisplayTitle = lazy(() => type(`1 <= string <= ${DISPLAY_TITLE_MAX}`))

/**
 * Internal (the gateway's, after it validated an upload and stored its canonical zip; no route of its own): a version
 * whose bytes are whole in `object` (the skill's id, `.` and a fresh suffix: protocol/files.ts#uploadObjectName), with
 * what validation found. `digest` (SHA-256 of the canonical zip) tells a retried upload from another one under a reused
 * Idempotency-Key.
 */
const bundleFields = {
  '+': 'reject',
  object: 'string <= 256',
  name: 'string <= 64',
  description: 'string <= 1024',
  files: 'number.integer >= 1',
  expanded_bytes: 'number.integer >= 0',
  size_bytes: 'number.integer >= 0',
  digest: /^SHA-256=[A-Za-z0-9_-]+=*$/,
} as const

export const SkillCreateInput = lazy(() =>
  type({ ...bundleFields, id: SkillId, 'display_title?': DisplayTitle }).narrow(
    (r, ctx) =>
      isUploadObjectOf(r.id, r.object) ||
      ctx.reject({ path: ['object'], expected: `the skill's id, "." and 26 characters`, actual: JSON.stringify(r.object.slice(0, 80)) }),
  ),
)
export type SkillCreateInputT = typeof SkillCreateInput.infer

export const SkillVersionInput = lazy(() => type(bundleFields))
export type SkillVersionInputT = typeof SkillVersionInput.infer

/** `source`: custom skills, or one of the vendor's sources (served here as an empty page). */
export const SKILL_SOURCES = ['custom', 'anthropic', 'anthropic_example', 'plugin'] as const

export const SkillListQuery = lazy(() =>
  type({
    '+': 'reject',
    'limit?': limitParam(100),
    'page?': pageParam,
    'source?': type.enumerated(...SKILL_SOURCES),
  }),
)
export type SkillListQueryT = typeof SkillListQuery.infer

export const SkillVersionListQuery = lazy(() => type({ '+': 'reject', 'limit?': limitParam(100), 'page?': pageParam }))
export type SkillVersionListQueryT = typeof SkillVersionListQuery.infer

/**
 * Internal (agents' and sessions' writes; no route): resolves a reference to a ready version (`latest`, null or
 * omitted: the newest) and records that `by` pins it, in the same step, so a deletion running beside it either sees
 * the pin or runs first (and the reference then finds no version).
 */
export const SkillPinInput = lazy(() => type({ '+': 'reject', by: AgentId.or(SessionId), 'version?': type.or('string <= 32', 'number.integer >= 1', 'null') }))
export type SkillPinInputT = typeof SkillPinInput.infer

/** A pinned version, with what sessions check of it (runtime names, aggregate size) and run it by (its bundle). */
export interface PinnedSkill {
  skill_id: string
  version: string
  name: string
  description: string
  expanded_bytes: number
  files: number
  /** The object in the skill bundles' store holding its canonical zip. */
  object: string
}

/** Internal (a session's delete): `by` no longer pins `version`. Its absence changes nothing: pins are checked anyway. */
export const SkillUnpinInput = lazy(() => type({ '+': 'reject', by: SessionId, version: type('string <= 32') }))
