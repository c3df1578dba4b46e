import { AgentKind } from '../ops/agent.js'
import type { Route } from './types.js'

const { create, list, get, update, archive, versions } = AgentKind.ops

export const agentRoutes: Route[] = [
  { method: 'POST', path: '/v1/agents', operationId: 'agents.create', summary: 'Create an agent', op: create, once: true },
  { method: 'GET', path: '/v1/agents', operationId: 'agents.list', summary: 'List agents (latest version of each)', op: list },
  { method: 'GET', path: '/v1/agents/{agent_id}', operationId: 'agents.retrieve', summary: 'Get an agent (latest or ?version=N)', op: get },
  { method: 'POST', path: '/v1/agents/{agent_id}', operationId: 'agents.update', summary: 'Update an agent', op: update },
  { method: 'POST', path: '/v1/agents/{agent_id}/archive', operationId: 'agents.archive', summary: 'Archive an agent', op: archive },
  { method: 'GET', path: '/v1/agents/{agent_id}/versions', operationId: 'agents.versions.list', summary: 'List the versions of an agent', op: versions },
]
