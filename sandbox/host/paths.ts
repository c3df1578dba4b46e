import path from 'node:path'

/**
 * Resolves a tool path against the session workdir. Absolute paths are honoured as-is:
 * the host-process backend runs tools as the server's own user on the server's own
 * filesystem, so it is NOT an isolation boundary — confining paths here would be
 * theatre while `bash` can reach everything anyway. Use a container/VM backend when
 * sessions must not see each other or the host.
 */
export function resolvePath(workdir: string, p: string): string {
  return path.resolve(workdir, p)
}

/** Path for display: relative to `base` when inside it, absolute otherwise. */
export function displayPath(base: string, abs: string): string {
  const rel = path.relative(base, abs)
  if (rel === '') return '.'
  if (rel.startsWith('..') || path.isAbsolute(rel)) return abs
  return rel.split(path.sep).join('/')
}
