import { readFileSync } from 'node:fs'

/**
 * Whether the server `pid` that left something behind (a cgroup branch, an egress directory) still runs. A zombie
 * does not: `kill(pid, 0)` succeeds on one, so the process's state is read as well.
 */
export function serverRuns(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z'
  } catch {
    return true
  }
}
