import { type, type Type } from 'arktype'
import { CLIENT_EVENT_TYPES, DELTA_TYPES, LISTABLE_EVENT_TYPES } from '../events.js'
import { HttpUrl, limitParam, pageParam, timestampParam } from './common.js'
import { EventId, FileId, ThreadId } from './ids.js'
import { listOf } from './list.js'
import { lazy } from './lazy.js'

/**
 * Session events a client sends (WIRE.md §7.1) and the queries of the event list and stream. Shapes only:
 * whether an event fits the session's state (a tool_use_id that is pending, a self-hosted environment for
 * user.tool_result) is the session actor's to answer.
 */

/**
 * Checks `type` against `allowed` before handing the object to `schema` (a union discriminated on `type`).
 * Without this, a non-object or a missing `type` is reported as a wrong `type` and an unknown one lists
 * every branch in arktype's order; with it the message reads "<path>.type must be one of …" and everything
 * else is reported by the one branch the type picked.
 */
export function tagged<S extends Type<object>>(allowed: readonly string[], schema: S, expected = `one of ${allowed.join(', ')}`) {
  return (
    type('object')
      .narrow((v, ctx) => {
        if (Array.isArray(v)) return ctx.mustBe('an object')
        const t: unknown = (v as { type?: unknown }).type
        if (typeof t === 'string' && allowed.includes(t)) return true
        return ctx.reject({ expected, actual: t === undefined ? 'missing' : JSON.stringify(t), relativePath: ['type'] })
      })
      // A real morph in between makes `schema` run after the check rather than merge into it.
      .pipe((v) => v)
      .pipe(schema)
  )
}

const UrlSource = lazy(() => type({ '+': 'reject', type: "'url'", url: HttpUrl }))
const FileSource = lazy(() => type({ '+': 'reject', type: "'file'", file_id: FileId }))

export const TextBlock = lazy(() => type({ '+': 'reject', type: "'text'", text: 'string' }))

// Where text is the only block allowed, a wrong `type` is the message rather than the text key it lacks.
const TextOnly = lazy(() => tagged(['text'], TextBlock, '"text"'))

export const ImageBlock = lazy(() =>
  type({
    '+': 'reject',
    type: "'image'",
    source: type({ '+': 'reject', type: "'base64'", data: 'string > 0', media_type: "'image/jpeg' | 'image/png' | 'image/gif' | 'image/webp'" })
      .or(UrlSource)
      .or(FileSource),
  }),
)

export const DocumentBlock = lazy(() =>
  type({
    '+': 'reject',
    type: "'document'",
    source: type({ '+': 'reject', type: "'base64'", data: 'string > 0', media_type: "'application/pdf'" })
      .or({ '+': 'reject', type: "'text'", data: 'string', media_type: "'text/plain'" })
      .or(UrlSource)
      .or(FileSource),
    'title?': 'string | null',
    'context?': 'string | null',
  }),
)

export const SearchResultBlock = lazy(() =>
  type({
    '+': 'reject',
    type: "'search_result'",
    source: 'string',
    title: 'string',
    content: listOf(TextOnly, { max: 1000 }),
    'citations?': { '+': 'reject', enabled: 'boolean' },
  }),
)

export const UserContent = lazy(() => listOf(type.or(TextBlock, ImageBlock, DocumentBlock), { min: 1, max: 1000 }))
export const ToolResultContent = lazy(() => listOf(type.or(TextBlock, ImageBlock, DocumentBlock, SearchResultBlock), { max: 1000 }))

const OptionalThread = lazy(() => ThreadId.or('null'))

export const UserMessageParams = lazy(() => type({ '+': 'reject', type: "'user.message'", content: UserContent }))

export const UserInterruptParams = lazy(() => type({ '+': 'reject', type: "'user.interrupt'", 'session_thread_id?': OptionalThread }))

export const UserToolConfirmationParams = lazy(() =>
  type({
    '+': 'reject',
    type: "'user.tool_confirmation'",
    tool_use_id: EventId,
    result: "'allow' | 'deny'",
    'deny_message?': 'string | null',
    'session_thread_id?': OptionalThread,
  }).narrow(
    (e, ctx) =>
      e.result === 'deny' || e.deny_message == null || ctx.reject({ problem: 'is only allowed when result is "deny"', relativePath: ['deny_message'] }),
  ),
)

export const UserCustomToolResultParams = lazy(() =>
  type({
    '+': 'reject',
    type: "'user.custom_tool_result'",
    custom_tool_use_id: EventId,
    'content?': ToolResultContent,
    'is_error?': 'boolean | null',
    'session_thread_id?': OptionalThread,
  }),
)

export const UserToolResultParams = lazy(() =>
  type({
    '+': 'reject',
    type: "'user.tool_result'",
    tool_use_id: EventId,
    'content?': ToolResultContent,
    'is_error?': 'boolean | null',
    'session_thread_id?': OptionalThread,
  }),
)

export const UserDefineOutcomeParams = lazy(() =>
  type({
    '+': 'reject',
    type: "'user.define_outcome'",
    description: 'string > 0',
    rubric: type({ '+': 'reject', type: "'text'", content: '0 < string <= 262144' }).or({ '+': 'reject', type: "'file'", file_id: FileId }),
    'max_iterations?': type('1 <= number.integer <= 20').or('null'),
  }),
)

export const SystemMessageParams = lazy(() => type({ '+': 'reject', type: "'system.message'", content: listOf(TextOnly, { min: 1, max: 1000 }) }))

export const EventParams = lazy(() =>
  tagged(
    CLIENT_EVENT_TYPES,
    type.or(
      UserMessageParams,
      UserInterruptParams,
      UserToolConfirmationParams,
      UserCustomToolResultParams,
      UserToolResultParams,
      UserDefineOutcomeParams,
      SystemMessageParams,
    ),
  ),
)

/** What a system.message may annotate: the event right before it (WIRE §7.1). */
const ANNOTATABLE = ['user.message', 'user.tool_result', 'user.custom_tool_result']

export const EventsSend = lazy(() =>
  type({
    '+': 'reject',
    events: listOf(EventParams, { min: 1, max: 100 }),
  }).narrow(({ events }, ctx) => {
    // "At most one" needs no check of its own: of two system messages, the first is not the last event.
    for (let i = 0; i < events.length; i++) {
      if (events[i]!.type !== 'system.message') continue
      const at = ['events', i]
      if (i !== events.length - 1) return ctx.reject({ problem: 'is a system.message, which must be the last event of the request', relativePath: at })
      const prev = events[i - 1]?.type
      if (prev === undefined || !ANNOTATABLE.includes(prev)) {
        const problem = 'is a system.message, which must directly follow a user.message, user.tool_result or user.custom_tool_result'
        return ctx.reject({ problem, relativePath: at })
      }
    }
    return true
  }),
)

/** A query value that may repeat: one string or several, always handed on as an array. */
export const listParam = <T>(item: Type<T>) =>
  type('string | string[]')
    .pipe((v) => (typeof v === 'string' ? [v] : v))
    .pipe(item.array())

const createdAt = {
  'created_at[gt]?': timestampParam,
  'created_at[gte]?': timestampParam,
  'created_at[lt]?': timestampParam,
  'created_at[lte]?': timestampParam,
} as const

const ListableType = lazy(() => type.enumerated(...LISTABLE_EVENT_TYPES))
// The default message would spell out all 41 types; a few examples say enough.
const EventTypeParam = lazy(() =>
  type('string').narrow(
    (s, ctx): s is typeof ListableType.infer =>
      ListableType.allows(s) ||
      ctx.reject({ expected: 'a session event type such as user.message, agent.message or session.status_idle', actual: JSON.stringify(s) }),
  ),
)

export const EventsListQuery = lazy(() =>
  type({
    'limit?': limitParam(1000),
    'order?': "'asc' | 'desc'",
    'page?': pageParam,
    'types?': listParam(EventTypeParam),
    ...createdAt,
  }),
)

export const EventsStreamQuery = lazy(() =>
  type({
    'event_deltas?': listParam(type.enumerated(...DELTA_TYPES)),
    'after?': 'string > 0',
  }),
)

export type TextBlockT = typeof TextBlock.infer
export type ImageBlockT = typeof ImageBlock.infer
export type DocumentBlockT = typeof DocumentBlock.infer
export type SearchResultBlockT = typeof SearchResultBlock.infer
export type UserContentT = typeof UserContent.infer
export type ToolResultContentT = typeof ToolResultContent.infer
export type UserMessageParamsT = typeof UserMessageParams.infer
export type UserInterruptParamsT = typeof UserInterruptParams.infer
export type UserToolConfirmationParamsT = typeof UserToolConfirmationParams.infer
export type UserCustomToolResultParamsT = typeof UserCustomToolResultParams.infer
export type UserToolResultParamsT = typeof UserToolResultParams.infer
export type UserDefineOutcomeParamsT = typeof UserDefineOutcomeParams.infer
export type SystemMessageParamsT = typeof SystemMessageParams.infer
export type EventParamsT = typeof EventParams.infer
export type EventsSendInput = typeof EventsSend.infer
export type EventsListInput = typeof EventsListQuery.infer
export type EventsStreamInput = typeof EventsStreamQuery.infer
