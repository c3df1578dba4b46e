import { type } from 'arktype'
import { ID_MAX_LENGTH, isId, type IdPrefix } from '../ids.js'

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

export const AgentId = idOf('agent')
export const EnvironmentId = idOf('env')
export const SessionId = idOf('sesn')
export const EventId = idOf('sevt')
export const ThreadId = idOf('sthr')
export const FileId = idOf('file')
export const SessionResourceId = idOf('sesrsc')
export const SkillId = idOf('skill')
export const VaultId = idOf('vlt')
export const MemoryStoreId = idOf('memstore')
export const DeploymentId = idOf('depl')
