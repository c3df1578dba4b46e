import type { ChildProcess } from 'node:child_process'

/** A heartbeat the server accepted, as test/work/worker-proc.ts prints it: the evidence leases are checked against. */
export interface Beat {
  t: number
  w: string
  item: string
  state: string
  last_heartbeat: string
  ttl_seconds: number
}

/** Collects a worker process's beat lines into `beats` as they come. */
export function readBeats(p: ChildProcess, beats: Beat[]): void {
  let buf = ''
  p.stdout!.on('data', (d: Buffer) => {
    buf += d.toString()
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      const line = buf.slice(0, i)
      buf = buf.slice(i + 1)
      try {
        beats.push(JSON.parse(line))
      } catch {
        // Not a beat line.
      }
    }
  })
}

/**
 * From the server's answers: a beat accepted for another worker must come only once the last holder's lease ran out
 * (by the server's own `last_heartbeat` times). The items beaten, hand-overs between workers, and each overlap.
 */
export function leaseOverlaps(beats: readonly Beat[]): { items: Set<string>; handovers: number; overlaps: string[] } {
  const byItem = new Map<string, Beat[]>()
  for (const b of beats) byItem.set(b.item, [...(byItem.get(b.item) ?? []), b])
  let handovers = 0
  const overlaps: string[] = []
  for (const [item, bs] of byItem) {
    const active = bs.filter((x) => x.state === 'active').sort((x, y) => Date.parse(x.last_heartbeat) - Date.parse(y.last_heartbeat) || x.t - y.t)
    for (let i = 1; i < active.length; i++) {
      const prev = active[i - 1]!
      const cur = active[i]!
      if (cur.w === prev.w) continue
      handovers++
      const gap = Date.parse(cur.last_heartbeat) - Date.parse(prev.last_heartbeat)
      if (gap < prev.ttl_seconds * 1000) overlaps.push(`${item}: ${cur.w} beat ${gap} ms after ${prev.w}'s beat of a ${prev.ttl_seconds} s lease`)
    }
  }
  return { items: new Set(byItem.keys()), handovers, overlaps }
}
