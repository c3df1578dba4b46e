/** How one command's stream ended. */
export type CaptureEnd = { kind: 'marker'; index: number; exitCode: number | null } | { kind: 'shell-exit'; code: number; signal: number | undefined }

/**
 * Collects one command's pty output until a sentinel marker shows the shell is ready again.
 * Only a bounded head of the stream is kept so a command spewing gigabytes cannot exhaust
 * the server's memory; marker detection runs over a small sliding window instead.
 */
export class Capture {
  private head = ''
  private streamed = 0
  /** Characters beyond the retained head, not counting the CRs the pty adds to each newline. */
  private dropped = 0
  private window = ''
  private settle!: (end: CaptureEnd) => void
  private settled = false
  readonly ended: Promise<CaptureEnd>

  /**
   * @param markers matches sentinel markers; group 1 is the sequence id, group 2 the exit status of a "done" marker
   * @param accepts whether a marker ends this capture (others are strays from earlier commands)
   */
  constructor(
    private readonly markers: RegExp,
    private readonly accepts: (marker: { id: number; kind: 'done' | 'sync' }) => boolean,
    private readonly retainChars: number,
  ) {
    this.ended = new Promise((resolve) => {
      this.settle = resolve
    })
  }

  push(data: string): void {
    if (this.settled) return
    const windowStart = this.streamed - this.window.length
    this.streamed += data.length
    const room = Math.max(0, this.retainChars - this.head.length)
    if (room > 0) this.head += data.slice(0, room)
    if (data.length > room) this.dropped += countNonCr(data, room)
    const scan = this.window + data
    for (const m of scan.matchAll(this.markers)) {
      const isDone = m[2] !== undefined
      if (this.accepts({ id: Number(m[1]), kind: isDone ? 'done' : 'sync' })) {
        this.finish({ kind: 'marker', index: windowStart + (m.index ?? 0), exitCode: isDone ? Number(m[2]) : null })
        return
      }
    }
    // Long enough to hold any marker split across chunks.
    this.window = scan.slice(-256)
  }

  shellExited(code: number, signal: number | undefined): void {
    this.finish({ kind: 'shell-exit', code, signal })
  }

  /**
   * Raw output before `end` (or all of it), and roughly how many characters were not
   * retained (the tail of the stream, marker included, is counted too; close enough for a note).
   */
  textBefore(end: number = this.streamed): { raw: string; dropped: number } {
    const raw = this.head.slice(0, end)
    return { raw, dropped: end > this.head.length ? this.dropped : 0 }
  }

  private finish(end: CaptureEnd): void {
    if (this.settled) return
    this.settled = true
    this.settle(end)
  }
}

function countNonCr(s: string, from: number): number {
  let n = 0
  for (let i = from; i < s.length; i++) if (s.charCodeAt(i) !== 13) n++
  return n
}
