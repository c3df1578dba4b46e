import type { Failovers } from '../actors/kit/index.js'
import { parsePartitionedSubject } from '../protocol/subjects.js'

/**
 * The wire's view of placement (`Failovers`): requests in flight to a partition hear when its holder changes, and a
 * request that found a partition unsubscribed has its holder looked at. Fed by the host's placement records.
 */
export class PartitionMoves implements Failovers {
  private readonly waiting = new Map<string, Set<() => void>>()
  /** Set once placement exists (the wire is made before it): a look at partition p's holder. */
  suspect: (kind: string, p: number) => void = () => undefined

  unanswered(subject: string): void {
    const at = parsePartitionedSubject(subject)
    if (at) this.suspect(at.kind, at.partition)
  }

  moved(subject: string, then: () => void): (() => void) | undefined {
    const at = parsePartitionedSubject(subject)
    if (!at) return undefined
    const key = `${at.kind}.${at.partition}`
    let set = this.waiting.get(key)
    if (!set) this.waiting.set(key, (set = new Set()))
    set.add(then)
    return () => {
      set.delete(then)
      if (!set.size && this.waiting.get(key) === set) this.waiting.delete(key)
    }
  }

  /** Partition p of kind changed holder: everything waiting on it hears so, once. */
  changed(kind: string, p: number): void {
    const key = `${kind}.${p}`
    const set = this.waiting.get(key)
    if (!set) return
    this.waiting.delete(key)
    for (const then of set) then()
  }
}
