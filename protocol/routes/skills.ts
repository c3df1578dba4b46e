import { SkillKind } from '../ops/skill.js'
import type { Route } from './types.js'

const ops = SkillKind.ops
const S = '/v1/skills/{skill_id}'
const V = `${S}/versions/{version}`

export const skillRoutes: Route[] = [
  {
    method: 'POST',
    path: '/v1/skills',
    operationId: 'skills.create',
    summary: 'Create a skill from a bundle',
    op: ops.create,
    once: true,
    beta: 'skills',
    bytes: 'skill',
  },
  { method: 'GET', path: '/v1/skills', operationId: 'skills.list', summary: 'List skills', op: ops.list, beta: 'skills' },
  { method: 'GET', path: S, operationId: 'skills.retrieve', summary: 'Get a skill', op: ops.get, beta: 'skills' },
  { method: 'DELETE', path: S, operationId: 'skills.delete', summary: 'Delete a skill without versions', op: ops.delete, beta: 'skills' },
  {
    method: 'POST',
    path: `${S}/versions`,
    operationId: 'skills.versions.create',
    summary: 'Add a version from a bundle',
    op: ops['versions.create'],
    once: true,
    beta: 'skills',
    bytes: 'skill',
  },
  { method: 'GET', path: `${S}/versions`, operationId: 'skills.versions.list', summary: "List a skill's versions", op: ops['versions.list'], beta: 'skills' },
  { method: 'GET', path: V, operationId: 'skills.versions.retrieve', summary: 'Get a skill version', op: ops['versions.get'], beta: 'skills' },
  {
    method: 'GET',
    path: `${V}/content`,
    operationId: 'skills.versions.download',
    summary: "Download a version's canonical zip",
    op: ops['versions.content'],
    beta: 'skills',
    bytes: 'download',
  },
  { method: 'DELETE', path: V, operationId: 'skills.versions.delete', summary: 'Delete a skill version', op: ops['versions.delete'], beta: 'skills' },
]
