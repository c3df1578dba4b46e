import { type } from 'arktype'
import type { Page } from '../page.js'
import { type Agent, AgentCreate, AgentGetQuery, AgentListQuery, AgentUpdate, AgentVersionsQuery } from '../schemas/agent.js'
import { defineKind, returns } from './define.js'
import { lazy } from '../schemas/lazy.js'

/** Internal (the session kind; no route): the agent version a new session snapshots, latest when omitted. */
export const AgentResolve = lazy(() => type({ 'version?': 'number | null' }))

/**
 * Agents. Creates and lists go to any host (the head key's compare-and-set keeps writers honest; lists come from
 * each host's projection). Reads and writes of one agent go to the host owning its partition, which keeps the
 * heads it owns in memory.
 */
export const AgentKind = defineKind(
  'agent',
  { param: 'agent_id', prefix: 'agent', noun: 'Agent' },
  {
    create: { placement: 'any', body: AgentCreate, reply: returns<Agent>() },
    list: { placement: 'any', query: AgentListQuery, reply: returns<Page<Agent>>() },
    resolve: { placement: 'any', body: AgentResolve, reply: returns<Agent>() },
    get: { placement: 'owner', query: AgentGetQuery, reply: returns<Agent>() },
    update: { placement: 'owner', body: AgentUpdate, reply: returns<Agent>() },
    archive: { placement: 'owner', reply: returns<Agent>() },
    versions: { placement: 'owner', query: AgentVersionsQuery, reply: returns<Page<Agent>>() },
  },
)
