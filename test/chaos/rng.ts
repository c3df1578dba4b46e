// A seeded PRNG (mulberry32) with sub-streams: the fault plan and each session's turn choices draw from their own
// stream, so the same seed gives the same choices however the run's timing interleaves them.

export class Rng {
  private s: number

  constructor(seed: number) {
    this.s = seed >>> 0
  }

  /** A float in [0, 1). */
  next(): number {
    let t = (this.s = (this.s + 0x6d2b79f5) >>> 0)
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }

  /** An integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1))
  }

  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.next() * xs.length)]!
  }

  /** One of `choices` with probability proportional to its weight. */
  weighted<T extends string>(choices: Readonly<Record<T, number>>): T {
    const entries = Object.entries(choices) as Array<[T, number]>
    let r = this.next() * entries.reduce((n, [, w]) => n + w, 0)
    for (const [k, w] of entries) if ((r -= w) < 0) return k
    return entries.at(-1)![0]
  }

  shuffle<T>(xs: readonly T[]): T[] {
    const out = [...xs]
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1))
      ;[out[i], out[j]] = [out[j]!, out[i]!]
    }
    return out
  }
}

/** A sub-stream of `seed` named by `label` (FNV-1a of both), independent of every other label. */
export function substream(seed: number, label: string): Rng {
  let h = 0x811c9dc5 ^ (seed >>> 0)
  for (const ch of label) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193)
  return new Rng(h)
}
