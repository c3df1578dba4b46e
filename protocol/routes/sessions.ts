import { SessionKind } from '../ops/session.js'
import type { Route } from './types.js'

const ops = SessionKind.ops

export const sessionRoutes: Route[] = [
  { method: 'POST', path: '/v1/sessions', operationId: 'sessions.create', summary: 'Create a session', op: ops.create, once: true },
  { method: 'GET', path: '/v1/sessions', operationId: 'sessions.list', summary: 'List sessions', op: ops.list },
  { method: 'GET', path: '/v1/sessions/{session_id}', operationId: 'sessions.retrieve', summary: 'Get a session', op: ops.get },
  { method: 'POST', path: '/v1/sessions/{session_id}', operationId: 'sessions.update', summary: 'Update a session', op: ops.update },
  { method: 'DELETE', path: '/v1/sessions/{session_id}', operationId: 'sessions.delete', summary: 'Delete a session and its history', op: ops.delete },
  { method: 'POST', path: '/v1/sessions/{session_id}/archive', operationId: 'sessions.archive', summary: 'Archive a session', op: ops.archive },
  {
    method: 'POST',
    path: '/v1/sessions/{session_id}/events',
    operationId: 'sessions.events.send',
    summary: 'Send events to a session',
    op: ops['events.send'],
    once: true,
  },
  {
    method: 'GET',
    path: '/v1/sessions/{session_id}/events',
    operationId: 'sessions.events.list',
    summary: 'List the events of a session',
    op: ops['events.list'],
  },
  {
    method: 'GET',
    path: '/v1/sessions/{session_id}/resources',
    operationId: 'sessions.resources.list',
    summary: 'List the resources of a session',
    op: ops['resources.list'],
  },
  {
    method: 'POST',
    path: '/v1/sessions/{session_id}/resources',
    operationId: 'sessions.resources.add',
    summary: 'Add a file resource to an idle session',
    op: ops['resources.add'],
    once: true,
  },
  {
    method: 'GET',
    path: '/v1/sessions/{session_id}/resources/{resource_id}',
    operationId: 'sessions.resources.retrieve',
    summary: 'Get a resource of a session',
    op: ops['resources.get'],
  },
  {
    method: 'POST',
    path: '/v1/sessions/{session_id}/resources/{resource_id}',
    operationId: 'sessions.resources.update',
    summary: "Rotate a resource's authorization token (GitHub repositories only)",
    op: ops['resources.update'],
  },
  {
    method: 'DELETE',
    path: '/v1/sessions/{session_id}/resources/{resource_id}',
    operationId: 'sessions.resources.delete',
    summary: 'Remove a resource from an idle session',
    op: ops['resources.delete'],
  },
  {
    method: 'GET',
    path: '/v1/sessions/{session_id}/events/stream',
    operationId: 'sessions.events.stream',
    summary: 'Stream the events of a session (server-sent events)',
    op: ops['stream.open'],
    stream: true,
  },
]
