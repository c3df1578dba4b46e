import type { Page } from '../page.js'
import { type ApiKey, ApiKeyCreate, ApiKeyListQuery, ApiKeyUpdate, type ApiKeyWithSecret } from '../schemas/api-key.js'
import { defineKind, returns } from './define.js'

/** API keys (the admin routes): any host serves any key; every write is a compare-and-set on its record. */
export const ApiKeyKind = defineKind(
  'api_key',
  { param: 'api_key_id', prefix: 'apikey', noun: 'API key' },
  {
    create: { placement: 'any', body: ApiKeyCreate, reply: returns<ApiKeyWithSecret>() },
    list: { placement: 'any', query: ApiKeyListQuery, reply: returns<Page<ApiKey>>() },
    get: { placement: 'any', reply: returns<ApiKey>() },
    update: { placement: 'any', body: ApiKeyUpdate, reply: returns<ApiKey>() },
    rotate: { placement: 'any', reply: returns<ApiKeyWithSecret>() },
    revoke: { placement: 'any', reply: returns<ApiKey>() },
  },
)
