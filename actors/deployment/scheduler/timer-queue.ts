import { type Clock, realMsUntil } from '../../../protocol/clock.js'

/** The longest one timer waits before looking at the clock again (a test clock's rate, a system clock that jumped). */
const MAX_SLEEP_MS = 30_000

interface Entry {
  at: number
  key: string
  gen: number
}

/**
 * Keys due at instants of a clock, in a binary heap, with one timer for the earliest: 10,000 deployments cost one
 * timer, not 10,000. Setting a key again supersedes its entry (the old one is skipped when it surfaces); `due` gets
 * every key whose instant has come, in order, from a timer callback that does no I/O, so passes never overlap.
 */
export class TimerQueue {
  private readonly heap: Entry[] = []
  /** The generation of each key's live entry. */
  private readonly live = new Map<string, number>()
  private gen = 0
  private timer: NodeJS.Timeout | undefined
  private armedFor = Number.POSITIVE_INFINITY
  private stopped = false
  /** Inside `fire`: keys set by `due` wait for the one re-arm at its end. */
  private firing = false

  constructor(
    private readonly clock: Clock,
    private readonly due: (key: string, at: number) => void,
  ) {}

  /** Key `key` is due at `at` (clock ms), replacing when it was due before. */
  set(key: string, at: number): void {
    const gen = ++this.gen
    this.live.set(key, gen)
    this.push({ at, key, gen })
    if (at < this.armedFor && !this.firing) this.arm()
  }

  delete(key: string): void {
    this.live.delete(key)
  }

  has(key: string): boolean {
    return this.live.has(key)
  }

  get size(): number {
    return this.live.size
  }

  stop(): void {
    this.stopped = true
    clearTimeout(this.timer)
  }

  private arm(): void {
    clearTimeout(this.timer)
    this.timer = undefined
    this.armedFor = Number.POSITIVE_INFINITY
    if (this.stopped) return
    const top = this.top()
    if (!top) return
    this.armedFor = top.at
    this.timer = setTimeout(() => this.fire(), Math.min(MAX_SLEEP_MS, Math.ceil(realMsUntil(this.clock, top.at))))
    this.timer.unref?.()
  }

  private fire(): void {
    this.firing = true
    try {
      const now = this.clock()
      for (let top = this.top(); top && top.at <= now && !this.stopped; top = this.top()) {
        this.pop()
        this.live.delete(top.key)
        this.due(top.key, top.at)
      }
    } finally {
      this.firing = false
      this.arm()
    }
  }

  /** The earliest live entry, dropping superseded ones on the way. */
  private top(): Entry | undefined {
    while (this.heap.length && this.live.get(this.heap[0]!.key) !== this.heap[0]!.gen) this.pop()
    return this.heap[0]
  }

  private push(e: Entry): void {
    const h = this.heap
    h.push(e)
    for (let i = h.length - 1; i > 0; ) {
      const parent = (i - 1) >> 1
      if (h[parent]!.at <= h[i]!.at) break
      ;[h[parent], h[i]] = [h[i]!, h[parent]!]
      i = parent
    }
  }

  private pop(): void {
    const h = this.heap
    const last = h.pop()!
    if (!h.length) return
    h[0] = last
    for (let i = 0; ; ) {
      const l = 2 * i + 1
      const r = l + 1
      let m = i
      if (l < h.length && h[l]!.at < h[m]!.at) m = l
      if (r < h.length && h[r]!.at < h[m]!.at) m = r
      if (m === i) break
      ;[h[m], h[i]] = [h[i]!, h[m]!]
      i = m
    }
  }
}
