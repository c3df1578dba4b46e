import { EventsListQuery, EventsSend, EventsStreamQuery } from '../schemas/events.js'
import { SessionCreate, SessionListQuery, SessionUpdate } from '../schemas/session.js'
import type { Route } from './types.js'

/** Everything about one session goes to the host owning its partition; a create mints the id that picks it. */
const owner = (op: string) => ({ kind: 'session' as const, op, key: 'session_id' })

export const sessionRoutes: Route[] = [
  { method: 'POST', path: '/v1/sessions', operationId: 'sessions.create', summary: 'Create a session', target: { ...owner('create'), mint: 'sesn' }, body: SessionCreate, once: true },
  // Listing spans every partition, so it goes to the shared sessions index.
  { method: 'GET', path: '/v1/sessions', operationId: 'sessions.list', summary: 'List sessions', target: { kind: 'sessions', op: 'list' }, query: SessionListQuery },
  { method: 'GET', path: '/v1/sessions/{session_id}', operationId: 'sessions.retrieve', summary: 'Get a session', target: owner('get') },
  { method: 'POST', path: '/v1/sessions/{session_id}', operationId: 'sessions.update', summary: 'Update a session', target: owner('update'), body: SessionUpdate },
  { method: 'DELETE', path: '/v1/sessions/{session_id}', operationId: 'sessions.delete', summary: 'Delete a session and its history', target: owner('delete') },
  { method: 'POST', path: '/v1/sessions/{session_id}/archive', operationId: 'sessions.archive', summary: 'Archive a session', target: owner('archive') },
  { method: 'POST', path: '/v1/sessions/{session_id}/events', operationId: 'sessions.events.send', summary: 'Send events to a session', target: owner('events.send'), body: EventsSend, once: true },
  { method: 'GET', path: '/v1/sessions/{session_id}/events', operationId: 'sessions.events.list', summary: 'List the events of a session', target: owner('events.list'), query: EventsListQuery },
  { method: 'GET', path: '/v1/sessions/{session_id}/events/stream', operationId: 'sessions.events.stream', summary: 'Stream the events of a session (server-sent events)', target: owner('stream.open'), query: EventsStreamQuery, stream: true },
]
