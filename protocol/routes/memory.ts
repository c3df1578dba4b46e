import { MemoryStoreKind } from '../ops/memory.js'
import type { Route } from './types.js'

const ops = MemoryStoreKind.ops
const S = '/v1/memory_stores/{memory_store_id}'
const M = `${S}/memories/{memory_id}`
const V = `${S}/memory_versions/{memory_version_id}`
// The official client sends `agent-memory-2026-07-22` on these (WIRE §1.2); strict mode also takes managed-agents'.
const beta = 'memory' as const

export const memoryRoutes: Route[] = [
  { method: 'POST', path: '/v1/memory_stores', operationId: 'memoryStores.create', summary: 'Create a memory store', op: ops.create, once: true, beta },
  { method: 'GET', path: '/v1/memory_stores', operationId: 'memoryStores.list', summary: 'List memory stores', op: ops.list, beta },
  { method: 'GET', path: S, operationId: 'memoryStores.retrieve', summary: 'Get a memory store', op: ops.get, beta },
  { method: 'POST', path: S, operationId: 'memoryStores.update', summary: 'Update a memory store', op: ops.update, beta },
  { method: 'DELETE', path: S, operationId: 'memoryStores.delete', summary: 'Delete a memory store, its memories and versions', op: ops.delete, beta },
  { method: 'POST', path: `${S}/archive`, operationId: 'memoryStores.archive', summary: 'Archive a memory store (irreversible)', op: ops.archive, beta },
  {
    method: 'POST',
    path: `${S}/memories`,
    operationId: 'memoryStores.memories.create',
    summary: 'Create a memory at a path',
    op: ops['memories.create'],
    once: true,
    beta,
  },
  { method: 'GET', path: `${S}/memories`, operationId: 'memoryStores.memories.list', summary: 'List memories by path', op: ops['memories.list'], beta },
  { method: 'GET', path: M, operationId: 'memoryStores.memories.retrieve', summary: 'Get a memory', op: ops['memories.get'], beta },
  { method: 'POST', path: M, operationId: 'memoryStores.memories.update', summary: 'Change a memory (content, path)', op: ops['memories.update'], beta },
  { method: 'DELETE', path: M, operationId: 'memoryStores.memories.delete', summary: 'Delete a memory', op: ops['memories.delete'], beta },
  {
    method: 'GET',
    path: `${S}/memory_versions`,
    operationId: 'memoryStores.memoryVersions.list',
    summary: 'List memory versions',
    op: ops['versions.list'],
    beta,
  },
  { method: 'GET', path: V, operationId: 'memoryStores.memoryVersions.retrieve', summary: 'Get a memory version', op: ops['versions.get'], beta },
  {
    method: 'POST',
    path: `${V}/redact`,
    operationId: 'memoryStores.memoryVersions.redact',
    summary: 'Redact a memory version (its content and path cleared, the record kept)',
    op: ops['versions.redact'],
    beta,
  },
]
