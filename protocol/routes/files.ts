import { FileKind } from '../ops/file.js'
import type { Route } from './types.js'

const ops = FileKind.ops

export const fileRoutes: Route[] = [
  { method: 'POST', path: '/v1/files', operationId: 'files.upload', summary: 'Upload a file', op: ops.create, once: true, beta: 'files', bytes: 'upload' },
  { method: 'GET', path: '/v1/files', operationId: 'files.list', summary: 'List files', op: ops.list, beta: 'files' },
  { method: 'GET', path: '/v1/files/{file_id}', operationId: 'files.retrieveMetadata', summary: 'Get a file', op: ops.get, beta: 'files' },
  {
    method: 'GET',
    path: '/v1/files/{file_id}/content',
    operationId: 'files.download',
    summary: 'Download a file',
    op: ops.content,
    beta: 'files',
    bytes: 'download',
  },
  { method: 'DELETE', path: '/v1/files/{file_id}', operationId: 'files.delete', summary: 'Delete a file', op: ops.delete, beta: 'files' },
]
