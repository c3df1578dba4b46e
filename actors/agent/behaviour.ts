import { decodeCursor, encodeCursor, isSeq } from '../../protocol/cursor.js'
import { fail } from '../../protocol/errors/fail.js'
import type { Agent, Multiagent } from '../../protocol/schemas/agent.js'
import { patchMetadata } from '../../protocol/schemas/common.js'
import { now } from '../../protocol/time.js'
import { type Handlers, keyedCreate, type Page, pageOf, type Projection } from '../kit/index.js'
import type { AgentKind } from '../../protocol/ops/agent.js'
import {
  checkSkillRequirements,
  checkToolGraph,
  normalizeExecutionIdentity,
  normalizeModel,
  normalizeServers,
  normalizeTools,
  textOrNull,
} from './normalize.js'
import { resolveMultiagent } from './multiagent.js'
import { checkCoordinatorToolNames, geoBreach, SELF_VERSION, stampSelf, storedMembers, type Member } from './roster.js'
import type { SkillResolver } from './skills.js'
import { versionKey, type AgentStore } from './state.js'

/**
 * What makes a new version. Metadata is deliberately not material: SPEC says non-material updates create no
 * version, and metadata is bookkeeping about the agent, not part of what a session runs. A metadata-only
 * change keeps the version number, moves updated_at, and rewrites the current version's stored record
 * with the new metadata. Self entries compare version-blind: they follow the version that contains them.
 */
function material(a: Agent): string {
  const roster = a.multiagent ? stampSelf(a.multiagent, a.id, SELF_VERSION) : null
  return JSON.stringify([a.name, a.description, a.system, a.model, a.tools, a.mcp_servers, a.skills, roster, a.execution_identity])
}

const sameMap = (a: Record<string, string>, b: Record<string, string>) => {
  const ka = Object.keys(a)
  return ka.length === Object.keys(b).length && ka.every((k) => b[k] === a[k])
}

const asDate = (d: unknown): Date | undefined => (d === undefined ? undefined : d instanceof Date ? d : new Date(d as string))

export function agentOps(store: AgentStore, projection: Projection<Agent>, resolveSkills: SkillResolver): Handlers<typeof AgentKind> {
  async function headOf(id: string | undefined) {
    const cur = await store.head(id)
    if (!cur) throw fail('agent_not_found', String(id))
    return cur.agent
  }

  function checkGeo(model: Agent['model'], members: Member[], prefix = '') {
    const breach = geoBreach(model, members)
    if (breach) throw fail('invalid_request', prefix + breach)
  }

  return {
    // Placed on any host: the id is new, and the create of its head is the fence against a second one.
    async create(req) {
      const b = req.body
      // With an Idempotency-Key the id comes from the key: a retry finds the agent (version 1) its first attempt stored.
      return keyedCreate('agent', 'agents.create', req, {
        stored: (id) => store.head(id),
        answer: async (head) => (await store.version(head.agent, 1)) ?? head.agent,
        // A fresh id met a stored one (a ULID collision), or a keyed create found its head gone (agents are never
        // deleted): neither happens, and neither is the client's to fix.
        taken: (id) => fail('internal', `agent id ${id} is taken`),
        async make(id, createdBy) {
          const model = normalizeModel(b.model)
          const tools = normalizeTools(b.tools ?? [])
          const servers = normalizeServers(b.mcp_servers ?? [])
          checkToolGraph(tools, servers)
          let multiagent: Multiagent | null = null
          if (b.multiagent) {
            // `self` on create is the agent being created, at version 1.
            const r = await resolveMultiagent(b.multiagent, null, id, store)
            checkGeo(model, r.members)
            multiagent = stampSelf(r.multiagent, id, 1)
          }
          checkCoordinatorToolNames(multiagent, tools)
          const skills = await resolveSkills(b.skills ?? [], id)
          checkSkillRequirements(skills, tools)
          const t = now()
          const agent: Agent = {
            id,
            type: 'agent',
            version: 1,
            name: b.name,
            description: textOrNull(b.description),
            system: textOrNull(b.system),
            model,
            tools,
            mcp_servers: servers,
            skills,
            multiagent,
            execution_identity: normalizeExecutionIdentity(b.execution_identity),
            metadata: b.metadata ?? {},
            created_at: t,
            updated_at: t,
            archived_at: null,
          }
          // The head is version 1: its own record is written once a later version supersedes it (update).
          return (await store.heads.create(id, { agent, ...(createdBy ? { created_by: createdBy } : {}) })) && agent
        },
      })
    },

    async list({ query }) {
      const q = query ?? {}
      await projection.fresh()
      const gte = asDate(q['created_at[gte]'])
      const lte = asDate(q['created_at[lte]'])
      const includeArchived = q.include_archived ?? false
      const filters = {
        'created_at[gte]': gte?.toISOString(),
        'created_at[lte]': lte?.toISOString(),
        include_archived: includeArchived,
      }
      const from = gte?.getTime() ?? -Infinity
      const to = lte?.getTime() ?? Infinity
      return pageOf(projection, 'agents', filters, q.page, q.limit ?? 20, (a) => {
        if (!includeArchived && a.archived_at !== null) return false
        const c = Date.parse(a.created_at)
        return c >= from && c <= to
      })
    },

    /**
     * Internal (session actor; no HTTP route): the agent record a new session snapshots, version `body.version`
     * (latest when omitted). 404 when the agent or the version does not exist; 400
     * `agent_archived` when the agent is archived, since archived agents cannot be selected for new sessions.
     */
    async resolve({ id, body }) {
      const head = await headOf(id)
      if (head.archived_at) throw fail('agent_archived', id)
      const n = body?.version
      if (n === undefined || n === null) return head
      if (typeof n !== 'number' || !Number.isInteger(n) || n < 1) throw fail('invalid_request', 'agent.version must be an integer of at least 1')
      const rec = await store.version(head, n)
      if (!rec) throw fail('agent_version_not_found', id, n)
      return rec
    },

    // Placed on the owner of the agent's partition: ops on its actor's state, the head it keeps in memory.
    ...store.heads.ops({
      get: {
        async shared({ agent: head }, { id, query }) {
          const n = query?.version
          if (n === undefined) return head
          const rec = await store.version(head, n)
          if (!rec) throw fail('agent_version_not_found', id, n)
          return rec
        },
      },

      /** Versions ascending. Versions are dense 1..head.version, so a page is a range of numbers read by key. */
      versions: {
        async shared({ agent: head }, { id, query }): Promise<Page<Agent>> {
          const q = query ?? {}
          const after = decodeCursor('agent_versions', { agent_id: id }, q.page, isSeq) ?? 0
          if (!Number.isInteger(after) || after < 0) throw fail('invalid_cursor')
          const last = Math.min(head.version, after + (q.limit ?? 20))
          const numbers: number[] = []
          for (let n = after + 1; n <= last; n++) numbers.push(n)
          const recs = await Promise.all(numbers.map((n) => store.version(head, n)))
          const data = recs.filter((r): r is Agent => r !== undefined)
          return { data, next_page: last < head.version ? encodeCursor('agent_versions', { agent_id: id }, last) : null }
        },
      },

      async update(head, { id, body: b }) {
        const a = head.agent
        if (a.archived_at) throw fail('agent_archived', id)
        if (b.version !== undefined && b.version !== a.version) throw fail('agent_version_conflict', a.version)

        const model = b.model === undefined ? a.model : normalizeModel(b.model, a.model)
        const tools = b.tools === undefined ? a.tools : normalizeTools(b.tools ?? [])
        const servers = b.mcp_servers === undefined ? a.mcp_servers : normalizeServers(b.mcp_servers ?? [])
        if (b.tools !== undefined || b.mcp_servers !== undefined) checkToolGraph(tools, servers)

        let multiagent: Multiagent | null = a.multiagent
        if (b.multiagent !== undefined) {
          multiagent = null
          if (b.multiagent !== null) {
            // A multiagent_20261001 onto a stored one merges (multiagent.ts); anything else replaces.
            const r = await resolveMultiagent(b.multiagent, a.multiagent, id, store)
            checkGeo(model, r.members)
            multiagent = r.multiagent
          }
        } else if (a.multiagent && model.inference_geo !== a.model.inference_geo) {
          // A model change must not break the stored roster's inference_geo agreement (SPEC).
          checkGeo(
            model,
            await storedMembers(a.multiagent, id, store),
            'model.inference_geo: this change breaks the stored coordinator roster (replace or clear multiagent in the same update): ',
          )
        }

        if (b.tools !== undefined || b.multiagent !== undefined) checkCoordinatorToolNames(multiagent, tools)

        // Omitted skills keep their pins as stored; given skills are re-resolved.
        const skills = b.skills === undefined ? a.skills : await resolveSkills(b.skills ?? [], a.id)
        if (b.skills !== undefined || b.tools !== undefined) checkSkillRequirements(skills, tools)

        let metadata = a.metadata
        if (b.metadata !== undefined) {
          metadata = patchMetadata(a.metadata, b.metadata)
        }

        const candidate: Agent = {
          ...a,
          name: b.name ?? a.name,
          description: b.description === undefined ? a.description : textOrNull(b.description),
          system: b.system === undefined ? a.system : textOrNull(b.system),
          model,
          tools,
          mcp_servers: servers,
          skills,
          multiagent,
          execution_identity: b.execution_identity === undefined ? a.execution_identity : normalizeExecutionIdentity(b.execution_identity),
          metadata,
        }
        const isMaterial = material(candidate) !== material(a)
        if (!isMaterial && sameMap(metadata, a.metadata)) return { reply: a }

        const version = isMaterial ? a.version + 1 : a.version
        const next: Agent = { ...candidate, version, multiagent: stampSelf(multiagent, id, version), updated_at: now() }
        // A new version supersedes the head: the head's version gets its own record first, so no crash can leave a
        // version without one. Then the head (the actor's new state), fenced by the revision it replaces.
        if (isMaterial) await store.versions.put(versionKey(id, a.version), a)
        // The head keeps the create's fingerprint: a retry of the create after an update still finds its agent.
        return { state: { ...head, agent: next }, reply: next }
      },

      archive(head) {
        const a = head.agent
        if (a.archived_at) return { reply: a }
        const t = now()
        // No new version: archived_at lives on the head and is laid over every version read.
        const agent: Agent = { ...a, archived_at: t, updated_at: t }
        return { state: { ...head, agent }, reply: agent }
      },
    }),
  }
}
