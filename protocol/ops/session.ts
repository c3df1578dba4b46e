import type { Page } from '../page.js'
import type { StreamOpenReply } from '../events.js'
import type { SessionEvent } from '../session-events.js'
import { EventsListQuery, EventsSend, EventsStreamQuery } from '../schemas/events.js'
import { SessionFromRun } from '../schemas/deployment.js'
import { SessionCreate, SessionListQuery, SessionUpdate } from '../schemas/session.js'
import type { Session, SessionThread } from '../session.js'
import { ThreadEventsQuery, ThreadListQuery } from '../schemas/thread.js'
import { ResourceAdd, ResourceListQuery, ResourceUpdate, type FileResource, type SessionResource } from '../schemas/resource.js'
import { defineKind, type IdSpec, returns } from './define.js'

/** A session's thread, named beside its session in the threads routes (WIRE §8). */
const ThreadIdSpec: IdSpec = { param: 'thread_id', prefix: 'sthr', noun: 'Session thread' }

/** A session's resource, named beside its session in the resources routes (WIRE §9). */
const ResourceId: IdSpec = { param: 'resource_id', prefix: 'sesrsc', noun: 'Session resource' }

/**
 * Sessions: everything about one session goes to the host owning its partition (a create mints the id that picks
 * it); listing spans every partition, so any host answers it from its projection.
 */
export const SessionKind = defineKind(
  'session',
  { param: 'session_id', prefix: 'sesn', noun: 'Session' },
  {
    create: { placement: 'owner', mint: true, body: SessionCreate, reply: returns<Session>() },
    /** Internal (a deployment run; no route): a session with `deployment_id`, its id and key from the run's id. */
    'create.run': { placement: 'owner', mint: true, body: SessionFromRun, reply: returns<Session>() },
    list: { placement: 'any', query: SessionListQuery, reply: returns<Page<Session>>() },
    get: { placement: 'owner', reply: returns<Session>() },
    update: { placement: 'owner', body: SessionUpdate, reply: returns<Session>() },
    delete: { placement: 'owner', reply: returns<{ id: string; type: 'session_deleted' }>() },
    archive: { placement: 'owner', reply: returns<Session>() },
    'events.send': { placement: 'owner', body: EventsSend, reply: returns<{ data: SessionEvent[] }>() },
    'events.list': { placement: 'owner', query: EventsListQuery, reply: returns<Page<SessionEvent>>() },
    'resources.list': { placement: 'owner', query: ResourceListQuery, reply: returns<Page<SessionResource>>() },
    /** Adds a file resource to an idle session: an independent copy of the file, mounted before its next tool runs. */
    'resources.add': { placement: 'owner', body: ResourceAdd, reply: returns<FileResource>() },
    'resources.get': { placement: 'owner', sub: ResourceId, reply: returns<SessionResource>() },
    /** A token rotation: only GitHub repositories take one, and sessions have none here. */
    'resources.update': { placement: 'owner', sub: ResourceId, body: ResourceUpdate, reply: returns<SessionResource>() },
    'resources.delete': { placement: 'owner', sub: ResourceId, reply: returns<{ id: string; type: 'session_resource_deleted' }>() },
    /** Opens an SSE tail: the last stored sequence, from which the gateway goes live. */
    'stream.open': { placement: 'owner', query: EventsStreamQuery, reply: returns<StreamOpenReply>() },
    'threads.list': { placement: 'owner', query: ThreadListQuery, reply: returns<Page<SessionThread>>() },
    'threads.get': { placement: 'owner', sub: ThreadIdSpec, reply: returns<SessionThread>() },
    /** A child thread that is not running; the primary is archived with its session. */
    'threads.archive': { placement: 'owner', sub: ThreadIdSpec, reply: returns<SessionThread>() },
    'threads.events': { placement: 'owner', sub: ThreadIdSpec, query: ThreadEventsQuery, reply: returns<Page<SessionEvent>>() },
    /** A thread's SSE tail: the last stored sequence of its subject. */
    'threads.stream.open': { placement: 'owner', sub: ThreadIdSpec, query: EventsStreamQuery, reply: returns<StreamOpenReply>() },
  },
)
