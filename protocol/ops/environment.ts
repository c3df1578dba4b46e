import type { Page } from '../page.js'
import { type Environment, EnvironmentCreate, EnvironmentListQuery, EnvironmentUpdate } from '../schemas/environment.js'
import { defineKind, returns } from './define.js'

/** Environments: any host serves any environment; every write is a compare-and-set on its record. */
export const EnvironmentKind = defineKind(
  'environment',
  { param: 'environment_id', prefix: 'env', noun: 'Environment' },
  {
    create: { placement: 'any', body: EnvironmentCreate, reply: returns<Environment>() },
    list: { placement: 'any', query: EnvironmentListQuery, reply: returns<Page<Environment>>() },
    get: { placement: 'any', reply: returns<Environment>() },
    update: { placement: 'any', body: EnvironmentUpdate, reply: returns<Environment>() },
    archive: { placement: 'any', reply: returns<Environment>() },
    delete: { placement: 'any', reply: returns<{ id: string; type: 'environment_deleted' }>() },
    /** Internal (the session kind): one more session references the environment; 404 missing, 400 archived. */
    acquire: { placement: 'any', reply: returns<Environment>() },
    /** Internal (the session kind): a session no longer references it. */
    release: { placement: 'any', reply: returns<{ released: boolean }>() },
  },
)
