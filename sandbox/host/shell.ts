import { randomBytes } from 'node:crypto'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { spawn, type IPty } from 'node-pty'
import { Capture, type CaptureEnd } from './capture.js'
import { foregroundGroup, killJobs, killSession, signalQuietly } from './proc.js'
import { cleanTerminalText } from './terminal-text.js'
import { MAX_TIMER_MS, within } from './timers.js'

export interface ShellOptions {
  cwd: string
  env: Record<string, string>
  /** Characters of raw output kept per command; the rest is only counted. */
  retainChars: number
  /** How long a fresh shell may take to answer its first sentinel; default 10_000 ms. */
  startTimeoutMs?: number
  /** The program that becomes the interactive bash (e.g. bash inside a sandbox); default: the host's `bash -i`. */
  program?: { file: string; args: string[] }
  /**
   * Where command files go: `host` is written by this process, `inside` is the same directory as the shell sees
   * it; default: a fresh temp dir, the same path for both.
   */
  scratch?: { host: string; inside: string }
  /**
   * After an interrupt or a timeout, kill every job the shell started (background ones too), keeping the shell.
   * Default false: the host backend leaves background jobs alone, as an interactive bash would.
   */
  killJobsOnInterrupt?: boolean
}

export interface ShellRunResult {
  /** Cleaned output (may already be cut to `retainChars`). */
  output: string
  /** Raw characters produced but not retained. */
  droppedChars: number
  /** Exit status of the command; null when it did not run to completion. */
  exitCode: number | null
  ending: 'completed' | 'timeout' | 'aborted' | 'shell-exited'
  /** The shell had to be killed and will be started afresh: cwd and variables were lost. */
  shellReset: boolean
  /** Set when ending is 'shell-exited'. */
  shellExit?: { code: number; signal: number | undefined }
}

// After the first Ctrl-C, how long to wait for the shell before escalating to SIGKILL of the
// foreground group, and then how long before giving up on the shell entirely.
const GRACE_AFTER_SIGINT_MS = 500
const GRACE_AFTER_SIGKILL_MS = 2_000

/** An interactive bash that reads no start-up files and does no line editing. */
export const BASH_ARGS = ['--noprofile', '--norc', '--noediting', '-i']

/**
 * One long-lived interactive bash on a pty, so `cd` and `export` persist between tool calls.
 *
 * Each command is written to a scratch file and *sourced* (so it runs in the shell itself),
 * followed by a printf of a sentinel carrying `$?`. Going through a file rather than typing
 * the command avoids the tty's line-length limit and any quoting of the command text.
 * Sourcing with stdin from /dev/null stops commands from blocking on input and from
 * swallowing the sentinel lines we type after an interrupt.
 *
 * Sentinels carry a random per-shell nonce; the printf *format* differs from its output, so
 * an echoed command line can never be mistaken for a finished one. They go to /dev/tty so a
 * command that redirects the shell's own stdout (`exec >log`) cannot hide them.
 */
export class PersistentShell {
  private term: IPty | null = null
  private termExited: Promise<void> = Promise.resolve()
  private capture: { term: IPty; cap: Capture } | null = null
  private readonly nonce = randomBytes(8).toString('hex')
  private readonly markers: RegExp
  private seq = 0
  private queue: Promise<unknown> = Promise.resolve()
  private scratchDir: string | null = null
  private closing: Promise<void> | null = null

  constructor(private readonly opts: ShellOptions) {
    this.markers = new RegExp(`__TROUPE_${this.nonce}_(\\d+)_(?:done_(\\d+)|sync)__`, 'g')
  }

  /** Runs `command`; calls are serialised because they share one shell. */
  run(command: string, timeoutMs: number, signal?: AbortSignal): Promise<ShellRunResult> {
    return this.enqueue(() => this.runNow(command, timeoutMs, signal))
  }

  /** Replaces the shell with a fresh one in the original working directory. */
  restart(): Promise<void> {
    return this.enqueue(async () => {
      this.kill()
      await this.ensureStarted()
    })
  }

  /** Kills the shell and what it started now, even mid-command (which ends as `shell-exited`); the next command starts a new one. */
  terminate(): void {
    this.kill()
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      const exited = this.termExited
      this.kill()
      // Bounded: node-pty only reports exit once the pty is drained, which a stray
      // setsid'd process holding the tty could postpone indefinitely.
      await within(exited, 2_000)
      if (this.scratchDir) rmSync(this.scratchDir, { recursive: true, force: true })
    })()
    return this.closing
  }

  private enqueue<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn)
    this.queue = next.catch(() => undefined)
    return next
  }

  private async runNow(command: string, timeoutMs: number, signal?: AbortSignal): Promise<ShellRunResult> {
    if (signal?.aborted) {
      return { output: '', droppedChars: 0, exitCode: null, ending: 'aborted', shellReset: false }
    }
    await this.ensureStarted()
    const term = this.term
    if (!term) throw new Error('shell is not running')
    const id = ++this.seq
    const scratch = this.scratch()
    writeFileSync(path.join(scratch.host, 'command.sh'), command.endsWith('\n') ? command : `${command}\n`)
    const file = path.posix.join(scratch.inside, 'command.sh')
    // Its own "done" marker, or a "sync" typed during an interrupt of this command.
    const cap = new Capture(this.markers, (m) => (m.kind === 'done' ? m.id === id : m.id > id), this.opts.retainChars)
    this.capture = { term, cap }
    term.write(`. ${shellQuote(file)} < /dev/null; printf '__TROUPE_%s_%s__\\n' '${this.nonce}_${id}_done' "$?" >/dev/tty\n`)

    let timer: NodeJS.Timeout | undefined
    let onAbort: (() => void) | undefined
    const interrupted = new Promise<'timeout' | 'aborted'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), Math.min(timeoutMs, MAX_TIMER_MS))
      onAbort = () => resolve('aborted')
      signal?.addEventListener('abort', onAbort, { once: true })
      // An abort during shell startup fired before the listener existed.
      if (signal?.aborted) onAbort()
    })
    let end: CaptureEnd | undefined
    let ending: ShellRunResult['ending'] = 'completed'
    let shellReset = false
    try {
      const first = await Promise.race([cap.ended, interrupted])
      if (typeof first === 'string') {
        ending = first
        end = await this.interrupt(term, cap)
        shellReset = end === undefined || end.kind === 'shell-exit'
        if (!shellReset && this.opts.killJobsOnInterrupt) this.killJobs(term)
      } else {
        end = first
      }
    } finally {
      clearTimeout(timer)
      if (onAbort) signal?.removeEventListener('abort', onAbort)
      if (this.capture?.cap === cap) this.capture = null
    }

    const { raw, dropped } = cap.textBefore(end?.kind === 'marker' ? end.index : undefined)
    const result: ShellRunResult = {
      output: this.clean(raw),
      droppedChars: dropped,
      exitCode: end?.kind === 'marker' ? end.exitCode : null,
      ending,
      shellReset,
    }
    if (end?.kind === 'shell-exit' && ending === 'completed') {
      result.ending = 'shell-exited'
      result.shellExit = { code: end.code, signal: end.signal || undefined }
    }
    return result
  }

  /**
   * Stops the running command but tries hard to keep the shell (and its cwd/env):
   * Ctrl-C first — an interactive bash then abandons the rest of the line — then SIGKILL of
   * the foreground process group for commands that ignore SIGINT, and only then the whole
   * shell. Each round types a fresh "sync" sentinel; Ctrl-C flushes the tty's pending input,
   * so the sentinel is written after it.
   */
  private async interrupt(term: IPty, cap: Capture): Promise<CaptureEnd | undefined> {
    for (const round of [0, 1]) {
      if (this.term !== term) break
      if (round === 1) {
        const fg = foregroundGroup(term.pid)
        if (fg !== null) signalQuietly(-fg, 'SIGKILL')
      }
      term.write('\x03')
      // Let bash take the SIGINT before typing more: input arriving mid-interrupt can lose
      // characters. The leading newline is a sacrifice for the same reason.
      await delay(50)
      if (this.term !== term) break
      term.write(`\n${this.syncLine(++this.seq)}`)
      const end = await within(cap.ended, round === 0 ? GRACE_AFTER_SIGINT_MS : GRACE_AFTER_SIGKILL_MS)
      if (end?.kind === 'marker' && !(await this.drain(term))) break
      if (end) return end
    }
    this.kill()
    return undefined
  }

  /**
   * Waits until the shell has consumed everything typed at it so far, so the sync lines and
   * their output from an interrupt cannot leak into the next command's result.
   */
  private async drain(term: IPty): Promise<boolean> {
    const id = ++this.seq
    const cap = new Capture(this.markers, (m) => m.kind === 'sync' && m.id === id, 0)
    this.capture = { term, cap }
    term.write(this.syncLine(id))
    const end = await within(cap.ended, GRACE_AFTER_SIGKILL_MS)
    if (this.capture?.cap === cap) this.capture = null
    return end?.kind === 'marker'
  }

  /** The shell is idle (its sync marker came back), so the terminal's foreground group is the shell's own. */
  private killJobs(term: IPty): void {
    const shellGroup = foregroundGroup(term.pid)
    if (shellGroup !== null) killJobs(term.pid, [term.pid, shellGroup])
  }

  private syncLine(id: number): string {
    return `printf '__TROUPE_%s__\\n' '${this.nonce}_${id}_sync' >/dev/tty\n`
  }

  private clean(raw: string): string {
    const nonce = this.nonce
    return (
      cleanTerminalText(raw)
        // Late sync markers from an earlier interrupt, printed after that command's result was taken.
        .replace(new RegExp(`__TROUPE_${nonce}_\\d+_(?:done_\\d+|sync)__\\n?`, 'g'), '')
        // Our own typed lines, should a command have turned tty echo back on.
        .split('\n')
        .filter((line) => !line.includes(`${nonce}_`))
        .join('\n')
        .replace(/^\n+/, '')
        .replace(/\s+$/, '')
    )
  }

  private async ensureStarted(): Promise<void> {
    if (this.closing) throw new Error('the sandbox is closed')
    if (this.term) return
    mkdirSync(this.opts.cwd, { recursive: true })
    const program = this.opts.program ?? { file: 'bash', args: BASH_ARGS }
    const term = spawn(program.file, program.args, {
      name: 'dumb',
      cols: 200,
      rows: 50,
      cwd: this.opts.cwd,
      env: this.opts.env,
    })
    this.term = term
    this.termExited = new Promise((resolve) => {
      term.onExit(({ exitCode, signal }) => {
        if (this.term === term) {
          this.term = null
          // Whatever the shell left behind (background jobs) goes with it.
          killSession(term.pid)
        }
        if (this.capture?.term === term) this.capture.cap.shellExited(exitCode, signal)
        resolve()
      })
    })
    term.onData((data) => {
      if (this.capture?.term === term) this.capture.cap.push(data)
    })

    const id = ++this.seq
    const cap = new Capture(this.markers, (m) => m.kind === 'done' && m.id === id, 0)
    this.capture = { term, cap }
    // Echo off first so later command lines are not reflected into the output; prompts empty
    // so nothing but command output reaches the stream; history off so commands do not pile up.
    term.write(
      "stty -echo 2>/dev/null; PS1=''; PS2=''; PS0=''; unset PROMPT_COMMAND HISTFILE; set +o history; " +
        `printf '__TROUPE_%s_%s__\\n' '${this.nonce}_${id}_done' "$?"\n`,
    )
    const end = await within(cap.ended, this.opts.startTimeoutMs ?? 10_000)
    if (this.capture?.cap === cap) this.capture = null
    if (end?.kind !== 'marker') {
      this.kill()
      throw new Error(end ? `shell exited during startup (code ${end.code})` : 'shell did not start in time')
    }
  }

  private scratch(): { host: string; inside: string } {
    if (this.opts.scratch) return this.opts.scratch
    // Outside the workdir so command files never show up in the agent's own tree.
    this.scratchDir ??= mkdtempSync(path.join(tmpdir(), 'troupe-shell-'))
    return { host: this.scratchDir, inside: this.scratchDir }
  }

  private kill(): void {
    const term = this.term
    if (!term) return
    this.term = null
    // The pty made bash a session leader; every job it started (each in its own process
    // group, thanks to job control) shares that session.
    killSession(term.pid)
    signalQuietly(term.pid, 'SIGKILL')
  }
}

export function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`
}
