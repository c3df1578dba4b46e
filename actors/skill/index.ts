import { Objm } from '@nats-io/obj'
import { fail } from '../../protocol/errors/fail.js'
import type { FileBytes } from '../../protocol/files.js'
import { SkillKind } from '../../protocol/ops/skill.js'
import { Buckets, ObjectStores } from '../../protocol/subjects.js'
import { fileBytes, namedAtSource, ORPHAN_AGE_MS, sweepOrphans } from '../file/index.js'
import { every, listedKind, openObjectStore, type Work } from '../kit/index.js'
import { skillOps } from './behaviour.js'
import { type ListedSkill, SKILL_PREFIX, type SkillState, skillView } from './state.js'

/** Deleting versions: their bytes go, then the versions; given up, the versions go and the sweep takes the bytes. */
const deletions = (bundles: FileBytes): Work<SkillState> => ({
  pending: (s) => s.versions.some((v) => v.deleting),
  async step(s) {
    for (const v of s.versions) if (v.deleting) await bundles.discard(v.object)
    return { ...s, versions: s.versions.filter((v) => !v.deleting) }
  },
  abandon: (s) => ({ ...s, versions: s.versions.filter((v) => !v.deleting) }),
})

/**
 * Skills (kit/listed-kind.ts): each skill a durable-state actor on the owner of its partition, its versions in its
 * state, their canonical zips in the `troupe_skill_bundles` object store (written by the gateway before a version is
 * recorded). Deleting a version hides it at once and removes its bytes as work (resumed by the next owner after a
 * crash). Every host sweeps bytes no version names (an upload whose host died before recording it) at start-up and
 * every 10 minutes. Without the object store (it could not be opened at start-up) every op answers 422.
 */
export const skillKind = listedKind({
  contract: SkillKind,
  bucket: Buckets.skills,
  missing: (id) => fail('skill_not_found', id),
  prefix: SKILL_PREFIX,
  view: (s: SkillState): ListedSkill => ({
    id: s.skill.id,
    created_at: s.skill.created_at,
    skill: skillView(s),
    objects: s.versions.map((v) => v.object),
  }),
  work: (ctx) => deletions(fileBytes(ctx.js, ObjectStores.skills)),
  async ops(ctx, states, projection) {
    const bundles = await openObjectStore(new Objm(ctx.js), ctx.storage, ObjectStores.skills).then(
      () => fileBytes(ctx.js, ObjectStores.skills),
      (err) => {
        ctx.log.warn({ err }, 'the skill bundles object store could not be opened: skills routes answer 422')
        return undefined
      },
    )
    return skillOps({ states, client: ctx.client, projection, bundles })
  },
  background: (ctx, projection) => {
    const age = ctx.settings.sweepAgeMs ?? ORPHAN_AGE_MS
    return every(
      age,
      async () => {
        await projection.fresh()
        const os = await new Objm(ctx.js).open(ObjectStores.skills)
        const named = namedAtSource(projection, (s, object) => s.objects.includes(object))
        const gone: string[] = []
        const swept = await sweepOrphans(os, ctx.jsm, named, age, ObjectStores.skills, gone)
        if (swept) ctx.log.info({ swept, objects: gone.slice(0, 20) }, 'swept skill bundles no version names')
      },
      (err) => ctx.log.warn({ err }, 'sweeping orphaned skill bundles failed'),
    )
  },
})
