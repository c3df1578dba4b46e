/**
 * A small seeded PRNG (sfc32, seeded through splitmix32) so a fuzz run is a pure function of its seed: the
 * same `--seed` gives the same request sequence on any machine, and one request can be rebuilt on its own
 * from (seed, index) without generating the ones before it.
 */

/** splitmix32: spreads a 32-bit state into well-mixed words, to seed sfc32 and to derive sub-seeds. */
function splitmix32(state: number): () => number {
  let s = state >>> 0
  return () => {
    s = (s + 0x9e3779b9) >>> 0
    let z = s
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b)
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35)
    return (z ^ (z >>> 16)) >>> 0
  }
}

/** Mixes a seed with a stream label and an index, so each request draws from its own independent stream. */
export function deriveSeed(seed: number, label: string, index = 0): number {
  let h = 0x811c9dc5 ^ (seed >>> 0)
  for (const ch of `${label}#${index}`) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193)
  return splitmix32(h ^ Math.imul(index + 1, 0x27d4eb2d))()
}

export class Rng {
  private a: number
  private b: number
  private c: number
  private d: number

  constructor(seed: number) {
    const mix = splitmix32(seed)
    this.a = mix()
    this.b = mix()
    this.c = mix()
    this.d = mix()
    // sfc32's first outputs still echo the seed: burn a few.
    for (let i = 0; i < 12; i++) this.next()
  }

  /** A uniform 32-bit unsigned integer. */
  next(): number {
    const t = (((this.a + this.b) >>> 0) + this.d) >>> 0
    this.d = (this.d + 1) >>> 0
    this.a = this.b ^ (this.b >>> 9)
    this.b = (this.c + (this.c << 3)) >>> 0
    this.c = ((this.c << 21) | (this.c >>> 11)) >>> 0
    this.c = (this.c + t) >>> 0
    return t
  }

  /** A float in [0, 1). */
  float(): number {
    return this.next() / 2 ** 32
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.float() * n)
  }

  /** An integer in [lo, hi], both included. */
  between(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1)
  }

  chance(p: number): boolean {
    return this.float() < p
  }

  pick<T>(items: readonly T[]): T {
    if (!items.length) throw new Error('pick from an empty list')
    return items[this.int(items.length)]!
  }

  /** Picks by weight: `[[value, weight], …]`. */
  weighted<T>(items: ReadonlyArray<readonly [T, number]>): T {
    const total = items.reduce((s, [, w]) => s + w, 0)
    let r = this.float() * total
    for (const [v, w] of items) {
      if ((r -= w) < 0) return v
    }
    return items[items.length - 1]![0]
  }

  /** Fisher–Yates, in place. */
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = this.int(i + 1)
      ;[items[i], items[j]] = [items[j]!, items[i]!]
    }
    return items
  }

  /** Random bytes (for garbage payloads). */
  bytes(n: number): Buffer {
    const out = Buffer.allocUnsafe(n)
    for (let i = 0; i < n; i += 4) {
      const v = this.next()
      for (let k = 0; k < 4 && i + k < n; k++) out[i + k] = (v >>> (8 * k)) & 0xff
    }
    return out
  }
}
