import { spawn, type ChildProcess } from 'node:child_process'

/**
 * Kills what a test process started once that process is gone, however it went. tap ends a test file that outlives
 * its timeout with SIGKILL a second after asking (@tapjs/core's Spawn.timeout), so exit handlers never run and the
 * file's `troupe` servers would run on, loading the machine for every file after it. The reaper is a shell reading
 * lines from our pipe: `add <pid>` / `del <pid>` (a negative pid is a process group); at end of file (our exit, any
 * way, closes the pipe) it SIGKILLs every pid still listed. A pid is deleted as its process exits, so a number the
 * kernel hands out again is never killed.
 */
const SCRIPT = `pids=" "
while read -r op pid; do
  case "$op" in
    add) pids="$pids$pid " ;;
    del) pids=$(printf '%s' "$pids" | sed "s/ $pid / /") ;;
  esac
done
for p in $pids; do kill -s KILL -- "$p" 2>/dev/null; done`

let reaper: ChildProcess | undefined

function send(line: string): void {
  if (!reaper) {
    // Its own process group: a test that signals its own group (or tap's) does not stop the reaper.
    reaper = spawn('/bin/sh', ['-c', SCRIPT], { stdio: ['pipe', 'ignore', 'ignore'], detached: true })
    reaper.on('error', () => undefined)
    reaper.stdin!.on('error', () => undefined)
    reaper.unref()
    ;(reaper.stdin as unknown as { unref?: () => void }).unref?.()
  }
  reaper.stdin!.write(`${line}\n`)
}

/** SIGKILL `pid` (a negative pid: that process group) when this process ends, unless `forget` was called first. */
export function reapOnExit(pid: number): { forget(): void } {
  send(`add ${pid}`)
  return { forget: () => send(`del ${pid}`) }
}
