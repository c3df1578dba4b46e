import type { KV } from '@nats-io/kv'
import { isApiError } from '../../protocol/errors/api-error.js'
import { fail } from '../../protocol/errors/fail.js'
import { AgentKind } from '../../protocol/ops/agent.js'
import { SessionKind } from '../../protocol/ops/session.js'
import type { SkillRef } from '../../protocol/schemas/agent.js'
import { type ActorClient, type DurableState, type Handlers, isCasConflict, listKeys, listOf, pageOf, type Projection } from '../kit/index.js'
import { fingerprint } from '../../protocol/hash.js'
import { type FileBytes, isUploadObjectOf } from '../../protocol/files.js'
import type { SkillKind } from '../../protocol/ops/skill.js'
import type { Skill, SkillCreateInputT, SkillVersion, SkillVersionInputT } from '../../protocol/schemas/skill.js'
import { now } from '../../protocol/time.js'
import { withHasMore } from '../../protocol/page.js'
import { type ListedSkill, readyVersions, type SkillState, type StoredVersion, skillView } from './state.js'

export interface SkillDeps {
  states: DurableState<SkillState, typeof SkillKind>
  /** Asks agents and sessions whether they still pin a version (a version's delete). */
  client: ActorClient
  projection: Projection<ListedSkill, SkillState>
  /** The skill bundles' object store; undefined when it could not be opened (every op answers 422). */
  bundles: FileBytes | undefined
}

/** A pin younger than this is held without asking its pinner (its write may not be stored yet). */
const PIN_GRACE_MS = 5_000
/**
 * A session pins its skills just before its record is stored (session/skills.ts), and a create that fails after
 * pinning takes its pins back: one this young may belong to a record not stored yet, and counts without asking.
 */
const SESSION_PIN_GRACE_MS = 30_000

const pinnerOf = (by: string) => (by.startsWith('agent_') ? `agent ${by}` : `session ${by}`)

/**
 * Sessions' pins are keys of their own, `pin.<skill>.<version>.<session>` holding when it pinned (epoch ms), not
 * entries of the skill's state: a skill may be pinned by any number of sessions, and the state is rewritten whole.
 */
const sessionPinKey = (skill: string, version: string, session: string) => `pin.${skill}.${version}.${session}`

const enc = new TextEncoder()
const dec = new TextDecoder()

/** The key holding an explicit title: case and surrounding space do not make a title another. */
const titleKey = (title: string) => `title.${fingerprint(title.trim().toLowerCase())}`

export function skillOps({ states, client, projection, bundles }: SkillDeps): Handlers<typeof SkillKind> {
  const store = (): FileBytes => {
    if (!bundles) throw fail('skills_unavailable')
    return bundles
  }
  /** An attempt's bytes that no version will name: given back now rather than left to the sweep. */
  const discard = (object: string) =>
    store()
      .discard(object)
      .catch(() => undefined)

  /** Claims `title` for skill `id` across hosts; a holder whose skill never came to be, or is gone, gives it up. */
  async function claimTitle(kv: KV, title: string, id: string): Promise<string> {
    const key = titleKey(title)
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        await kv.create(key, enc.encode(id))
        return key
      } catch (err) {
        if (!isCasConflict(err)) throw err
      }
      const held = await kv.get(key)
      if (held?.operation !== 'PUT') continue
      const holder = dec.decode(held.value)
      if (holder === id) return key
      if (await states.read(holder)) throw fail('skill_title_taken', title)
      try {
        await kv.update(key, enc.encode(id), held.revision)
        return key
      } catch (err) {
        if (!isCasConflict(err)) throw err
      }
    }
    throw fail('skill_title_taken', title)
  }

  const versionOf = (id: string, n: number, b: SkillVersionInputT, t: string): SkillVersion => ({
    id: String(n),
    type: 'skill_version',
    skill_id: id,
    version: String(n),
    name: b.name,
    description: b.description,
    created_at: t,
  })
  const stored = (version: SkillVersion, b: SkillVersionInputT, key: string | undefined): StoredVersion => ({
    version,
    object: b.object,
    size_bytes: b.size_bytes,
    expanded_bytes: b.expanded_bytes,
    files: b.files,
    digest: b.digest,
    ...(key === undefined ? {} : { key: fingerprint(key) }),
  })
  const findVersion = (s: SkillState, id: string, v: string): StoredVersion => {
    const found = readyVersions(s).find((x) => x.version.version === v)
    if (!found) throw fail('skill_version_not_found', id, v)
    return found
  }

  /** A create whose id is stored already: the retry of an upload with its Idempotency-Key, or a reused key. */
  async function retried(s: SkillState, b: SkillCreateInputT, createdBy: string | undefined): Promise<Skill> {
    if (s.versions[0]?.object !== b.object) await discard(b.object)
    if (createdBy === undefined || s.created_by !== createdBy) throw fail('idempotency_key_reused')
    return skillView(s)
  }

  /** Whether `by` (an agent or a session) still pins version `v` of skill `id`: it exists, is live, and names it. */
  async function stillPins(by: string, id: string, v: string): Promise<boolean> {
    const names = (refs: readonly SkillRef[]) => refs.some((r) => r.type === 'custom' && r.skill_id === id && r.version === v)
    const gone = (err: unknown) => {
      if (isApiError(err) && err.status === 404) return false
      throw err
    }
    if (by.startsWith('agent_')) return client.call(AgentKind.ops.get, { id: by, query: {} }).then((a) => !a.archived_at && names(a.skills), gone)
    return client.call(SessionKind.ops.get, { id: by }).then((x) => names(x.agent.skills), gone)
  }

  /** Whether `by` is an agent its owner says is archived (read at the source, so an archive that answered is seen). */
  async function archivedAgent(by: string): Promise<boolean> {
    if (!by.startsWith('agent_')) return false
    return client.call(AgentKind.ops.get, { id: by, query: {} }).then(
      (a) => a.archived_at !== null,
      (err: unknown) => {
        if (isApiError(err) && err.status === 404) return false
        throw err
      },
    )
  }

  /**
   * Refuses while a session that is not physically deleted pins version `v`; the keys of sessions gone are removed on
   * the way. A version being deleted takes no new pin (`pin` runs on this owner, after this op), so none can slip in.
   */
  async function checkSessionPins(id: string, v: string): Promise<void> {
    const kv = states.kv
    const prefix = sessionPinKey(id, v, '')
    for (const key of await listKeys(kv, `${prefix}*`)) {
      const entry = await kv.get(key)
      if (entry?.operation !== 'PUT') continue
      const by = key.slice(prefix.length)
      const at = Number(dec.decode(entry.value))
      if (Date.now() - at < SESSION_PIN_GRACE_MS || (await stillPins(by, id, v))) throw fail('skill_version_pinned', id, v, pinnerOf(by))
      await kv.delete(key)
    }
  }

  const ops = states.ops({
    get: { shared: (s) => skillView(s) },

    delete(s) {
      store()
      if (s.versions.length) throw fail('skill_has_versions', s.skill.id, s.versions.length)
      // Its title key stays: the next skill to claim the title finds this one gone and takes it over.
      return { delete: true, reply: { id: s.skill.id, type: 'skill_deleted' as const } }
    },

    async 'versions.create'(s, { id, body: b, key }) {
      store()
      if (!isUploadObjectOf(id, b.object)) {
        await discard(b.object)
        throw fail('invalid_request', `object: ${JSON.stringify(b.object)} is not an upload of skill ${id}`)
      }
      const keyed = key === undefined ? undefined : fingerprint(key)
      const again = keyed === undefined ? undefined : s.versions.find((v) => v.key === keyed)
      if (again) {
        if (again.object !== b.object) await discard(b.object)
        if (again.digest !== b.digest || again.deleting) throw fail('idempotency_key_reused')
        return { reply: again.version }
      }
      if (b.name !== s.name) {
        await discard(b.object)
        throw fail('skill_name_changed', b.name, s.name)
      }
      const t = now()
      const version = versionOf(id, s.next, b, t)
      const state: SkillState = {
        ...s,
        next: s.next + 1,
        versions: [...s.versions, stored(version, b, key)],
        skill: { ...s.skill, updated_at: t },
      }
      return { state, reply: version }
    },

    'versions.list': {
      shared: (s, { id, query: q }) =>
        withHasMore(pageOf(listOf(readyVersions(s).map((v) => v.version)), 'skill_versions', { skill_id: id }, q.page, q.limit ?? 20, () => true)),
    },

    'versions.get': { shared: (s, { id, sub }) => findVersion(s, id, sub).version },

    'versions.content': {
      shared: (s, { id, sub }) => {
        store()
        const v = findVersion(s, id, sub)
        return {
          file: { id: `${id}/versions/${sub}`, filename: `${v.version.name}-${sub}.zip`, mime_type: 'application/zip', size_bytes: v.size_bytes },
          object: v.object,
          store: 'skills' as const,
        }
      },
    },

    async 'versions.delete'(s, { id, sub }) {
      store()
      const v = findVersion(s, id, sub)
      for (const [by, at] of Object.entries(s.pins?.[sub] ?? {})) {
        // A pin this young may belong to a write still under way (its agent not yet stored, or an update not yet
        // naming it): it counts, unless its agent is archived, which no write ever undoes.
        const holds = Date.now() - at < PIN_GRACE_MS ? !(await archivedAgent(by)) : await stillPins(by, id, sub)
        if (holds) throw fail('skill_version_pinned', id, sub, pinnerOf(by))
      }
      await checkSessionPins(id, sub)
      const { [sub]: _unpinned, ...pins } = s.pins ?? {}
      // Hidden at once; its bytes go next (the kind's work), then the version itself.
      const versions = s.versions.map((x) => (x === v ? { ...x, deleting: true as const } : x))
      return {
        state: { ...s, versions, pins, skill: { ...s.skill, updated_at: now() } },
        reply: { id: v.version.id, type: 'skill_version_deleted' as const },
      }
    },

    async pin(s, { id, body: b }) {
      store()
      const wanted = b.version === undefined || b.version === null || b.version === 'latest' ? undefined : String(b.version)
      const ready = readyVersions(s)
      const v = wanted === undefined ? ready.at(-1) : ready.find((x) => x.version.version === wanted)
      if (!v) throw fail('skill_version_not_found', id, wanted ?? 'latest')
      const n = v.version.version
      const reply = {
        skill_id: id,
        version: n,
        name: v.version.name,
        description: v.version.description,
        expanded_bytes: v.expanded_bytes,
        files: v.files,
        object: v.object,
      }
      // A session pins once, for its life: its key, not the state (see sessionPinKey).
      if (b.by.startsWith('sesn_')) {
        await states.kv.put(sessionPinKey(id, n, b.by), enc.encode(String(Date.now())))
        return { reply }
      }
      // One version of a skill per agent: a pin moves from the version it held before.
      const pins: Record<string, Record<string, number>> = {}
      for (const [version, by] of Object.entries(s.pins ?? {})) {
        const { [b.by]: _moved, ...rest } = by
        if (Object.keys(rest).length) pins[version] = rest
      }
      pins[n] = { ...pins[n], [b.by]: Date.now() }
      return { state: { ...s, pins }, reply }
    },

    unpin: {
      shared: async (_s, { id, body: b }) => {
        await states.kv.delete(sessionPinKey(id, b.version, b.by))
        return { unpinned: true }
      },
    },
  })

  return {
    // Placed on any host: the gateway minted the id (from the Idempotency-Key when there is one), and the create of its
    // state is the fence against a second one.
    async create({ body: b, key }) {
      store()
      const createdBy = key === undefined ? undefined : fingerprint(JSON.stringify([b.digest, b.display_title ?? null]))
      const before = await states.read(b.id)
      if (before) return retried(before, b, createdBy)
      const titled =
        b.display_title !== undefined
          ? await claimTitle(states.kv, b.display_title, b.id).catch(async (err) => {
              await discard(b.object)
              throw err
            })
          : undefined
      const t = now()
      const title = b.display_title ?? b.name
      const skill: Skill = {
        id: b.id,
        type: 'skill',
        display_title: title,
        display_name: title,
        latest_version: '1',
        latest_version_id: '1',
        source: { type: 'custom' },
        created_at: t,
        updated_at: t,
      }
      const state: SkillState = {
        skill,
        name: b.name,
        ...(createdBy === undefined ? {} : { created_by: createdBy }),
        next: 2,
        versions: [stored(versionOf(b.id, 1, b, t), b, undefined)],
        ...(titled === undefined ? {} : { title_key: titled }),
      }
      if (!(await states.create(b.id, state))) {
        const raced = await states.read(b.id)
        if (raced) return retried(raced, b, createdBy)
        throw fail('internal', `skill ${b.id} was created and deleted while this create ran`)
      }
      return skillView(state)
    },

    async list({ query: q }) {
      store()
      const source = q.source ?? 'custom'
      await projection.fresh()
      // Vendor-managed skills are not served here: their sources list nothing.
      return withHasMore(
        pageOf(
          projection,
          'skills',
          { source },
          q.page,
          q.limit ?? 20,
          () => source === 'custom',
          (r) => r.skill,
        ),
      )
    },

    ...ops,
  }
}
