import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { INTERRUPTED } from '../host/file-tools.js'
import { signalQuietly } from '../host/proc.js'
import { within } from '../host/timers.js'
import { errorResult, type ToolResult } from '../types.js'
import type { Program } from './launch.js'
import type { ToolRequest, ToolResponse } from './tool-wire.js'

/** An aborted call that has not answered by then has its whole process killed. */
const ABORT_GRACE_MS = 1_000
const STDERR_KEPT = 2_000

/** The server's end of a sandbox's tool server: started on first use, started again after it died. */
export class ToolClient {
  private proc: ChildProcessWithoutNullStreams | undefined
  private readonly pending = new Map<number, (r: ToolResult) => void>()
  private seq = 0
  private stderr = ''

  constructor(
    private readonly program: () => Program,
    private readonly env: Record<string, string>,
    private readonly cwd: string,
  ) {}

  async call(name: string, input: unknown, signal?: AbortSignal): Promise<ToolResult> {
    const proc = this.start()
    const id = ++this.seq
    const answered = new Promise<ToolResult>((resolve) => this.pending.set(id, resolve))
    this.send(proc, { id, name, input })
    const onAbort = () => {
      this.send(proc, { id, abort: true })
      void within(answered, ABORT_GRACE_MS).then((r) => {
        if (r !== undefined) return
        this.pending.get(id)?.(errorResult(INTERRUPTED))
        this.pending.delete(id)
        if (proc.pid) signalQuietly(proc.pid, 'SIGKILL')
      })
    }
    signal?.addEventListener('abort', onAbort, { once: true })
    try {
      return await answered
    } finally {
      signal?.removeEventListener('abort', onAbort)
    }
  }

  /** Kills the tool server; pending calls answer as interrupted. */
  close(): void {
    const proc = this.proc
    this.proc = undefined
    if (proc?.pid) signalQuietly(proc.pid, 'SIGKILL')
    this.settleAll(errorResult(INTERRUPTED))
  }

  private start(): ChildProcessWithoutNullStreams {
    if (this.proc) return this.proc
    const { file, args } = this.program()
    const proc = spawn(file, args, { env: this.env, cwd: this.cwd, stdio: ['pipe', 'pipe', 'pipe'] })
    this.proc = proc
    this.stderr = ''
    proc.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderr = (this.stderr + chunk).slice(-STDERR_KEPT)
    })
    createInterface({ input: proc.stdout, crlfDelay: Number.POSITIVE_INFINITY }).on('line', (line) => {
      let msg: ToolResponse
      try {
        msg = JSON.parse(line) as ToolResponse
      } catch {
        return
      }
      const resolve = this.pending.get(msg.id)
      this.pending.delete(msg.id)
      resolve?.(msg.result)
    })
    // A write to a process that just died fails here, not as an unhandled error; its exit answers the calls.
    proc.stdin.on('error', () => undefined)
    proc.on('error', (err) => this.exited(proc, `could not start: ${err.message}`))
    proc.on('exit', (code, sig) => this.exited(proc, sig ? `was killed by ${sig}` : `exited with code ${code}`))
    return proc
  }

  private exited(proc: ChildProcessWithoutNullStreams, how: string): void {
    if (this.proc !== proc) return
    this.proc = undefined
    const detail = this.stderr.trim() ? `: ${this.stderr.trim()}` : ''
    this.settleAll(errorResult(`The sandbox's file tool process ${how}${detail}. The next call starts a new one.`))
  }

  private settleAll(result: ToolResult): void {
    for (const resolve of this.pending.values()) resolve(result)
    this.pending.clear()
  }

  private send(proc: ChildProcessWithoutNullStreams, msg: ToolRequest): void {
    if (proc.stdin.writable) proc.stdin.write(`${JSON.stringify(msg)}\n`)
  }
}
