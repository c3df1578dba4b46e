import type { PageWithMore } from '../page.js'
import type { Downloadable } from '../files.js'
import {
  isVersionNumber,
  type PinnedSkill,
  type Skill,
  SkillCreateInput,
  SkillListQuery,
  SkillPinInput,
  SkillUnpinInput,
  type SkillVersion,
  SkillVersionInput,
  SkillVersionListQuery,
} from '../schemas/skill.js'
import { defineKind, type IdSpec, returns } from './define.js'

/** A version, named beside its skill by its number (`"1"`, `"2"`, …). */
const VersionNumber: IdSpec = { param: 'version', prefix: '', noun: 'Skill version', check: isVersionNumber }

/**
 * Skills and their versions. The bytes never travel over the actor wire: the gateway validates an upload (its worker
 * pool), stores the canonical zip in the skill bundles' object store, then asks `create` or `versions.create` to record
 * it; `versions.content` says which object a download streams. Everything about one skill goes to the host owning its
 * partition (a durable-state actor whose state holds its versions); creates and lists go to any host.
 */
export const SkillKind = defineKind(
  'skill',
  { param: 'skill_id', prefix: 'skill', noun: 'Skill' },
  {
    create: { placement: 'any', body: SkillCreateInput, reply: returns<Skill>() },
    list: { placement: 'any', query: SkillListQuery, reply: returns<PageWithMore<Skill>>() },
    get: { placement: 'owner', reply: returns<Skill>() },
    delete: { placement: 'owner', reply: returns<{ id: string; type: 'skill_deleted' }>() },
    'versions.create': { placement: 'owner', body: SkillVersionInput, reply: returns<SkillVersion>() },
    'versions.list': { placement: 'owner', query: SkillVersionListQuery, reply: returns<PageWithMore<SkillVersion>>() },
    'versions.get': { placement: 'owner', sub: VersionNumber, reply: returns<SkillVersion>() },
    'versions.content': { placement: 'owner', sub: VersionNumber, reply: returns<{ file: Downloadable; object: string; store: 'skills' }>() },
    'versions.delete': { placement: 'owner', sub: VersionNumber, reply: returns<{ id: string; type: 'skill_version_deleted' }>() },
    /** Internal (agents, sessions): a reference resolved to a ready version and pinned by the caller, in one step. */
    pin: { placement: 'owner', body: SkillPinInput, reply: returns<PinnedSkill>() },
    /** Internal (a session's delete): the session's pin of a version goes. */
    unpin: { placement: 'owner', body: SkillUnpinInput, reply: returns<{ unpinned: boolean }>() },
  },
)
