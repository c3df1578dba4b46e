import { type } from 'arktype'
import { ID_MAX_LENGTH, isId, type IdPrefix } from '../ids.js'
import { lazy } from './lazy.js'

/**
 * The schema of one kind of id, for every body field and query parameter that names a resource:
 * `environment_id must be an id like env_01… (letters, digits, _ or - after env_, at most 128 characters) (was "a..b")`.
 */
export const idOf = (prefix: IdPrefix) =>
  type('string').narrow(
    (s, ctx) =>
      isId(prefix, s) ||
      ctx.reject({
        expected: `an id like ${prefix}_01… (letters, digits, _ or - after ${prefix}_, at most ${ID_MAX_LENGTH} characters)`,
        actual: JSON.stringify(s.length > 40 ? `${s.slice(0, 40)}…` : s),
      }),
  )

export const AgentId = lazy(() => idOf('agent'))
export const EnvironmentId = lazy(() => idOf('env'))
export const SessionId = lazy(() => idOf('sesn'))
export const EventId = lazy(() => idOf('sevt'))
export const ThreadId = lazy(() => idOf('sthr'))
export const FileId = lazy(() => idOf('file'))
export const SessionResourceId = lazy(() => idOf('sesrsc'))
export const SkillId = lazy(() => idOf('skill'))
export const VaultId = lazy(() => idOf('vlt'))
export const MemoryStoreId = lazy(() => idOf('memstore'))
export const MemoryId = lazy(() => idOf('mem'))
export const MemoryVersionId = lazy(() => idOf('memver'))
export const DeploymentId = lazy(() => idOf('depl'))
export const DreamId = lazy(() => idOf('drm'))
