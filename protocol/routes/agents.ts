import { AgentCreate, AgentGetQuery, AgentListQuery, AgentUpdate, AgentVersionsQuery } from '../schemas/agent.js'
import type { Route } from './types.js'

const agent = (op: string) => ({ kind: 'agent' as const, op })
/** Reads and writes of one agent go to the host owning its partition, which serves reads from memory. */
const owner = (op: string) => ({ kind: 'agent' as const, op, key: 'agent_id' })

export const agentRoutes: Route[] = [
  { method: 'POST', path: '/v1/agents', operationId: 'agents.create', summary: 'Create an agent', target: agent('create'), body: AgentCreate, once: true },
  { method: 'GET', path: '/v1/agents', operationId: 'agents.list', summary: 'List agents (latest version of each)', target: agent('list'), query: AgentListQuery },
  { method: 'GET', path: '/v1/agents/{agent_id}', operationId: 'agents.retrieve', summary: 'Get an agent (latest or ?version=N)', target: owner('get'), query: AgentGetQuery },
  { method: 'POST', path: '/v1/agents/{agent_id}', operationId: 'agents.update', summary: 'Update an agent', target: owner('update'), body: AgentUpdate },
  { method: 'POST', path: '/v1/agents/{agent_id}/archive', operationId: 'agents.archive', summary: 'Archive an agent', target: owner('archive') },
  { method: 'GET', path: '/v1/agents/{agent_id}/versions', operationId: 'agents.versions.list', summary: 'List the versions of an agent', target: owner('versions'), query: AgentVersionsQuery },
]
