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
    path: '/v1/sessions/{session_id}/events/stream',
    operationId: 'sessions.events.stream',
    summary: 'Stream the events of a session (server-sent events)',
    op: ops['stream.open'],
    stream: true,
  },
]
