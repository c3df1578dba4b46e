import type { KV } from '@nats-io/kv'
import { partitionOf } from '../../protocol/subjects.js'
import { listKeys } from './kv-keys.js'

/**
 * An actor's work marker, `work.<id>` in its kind's bucket: present while it has work that outlasts a request (a
 * session's turn), so a host that takes its partition over knows to resume it.
 */
export const WORK_PREFIX = 'work.'
export const workKey = (id: string) => `${WORK_PREFIX}${id}`

/** The ids of partition p that have a work marker in `kv`. */
export async function listMarked(kv: KV, p: number): Promise<string[]> {
  const ids: string[] = []
  for (const k of await listKeys(kv, `${WORK_PREFIX}>`)) {
    const id = k.slice(WORK_PREFIX.length)
    if (partitionOf(id) === p) ids.push(id)
  }
  return ids
}

/** What an owner knows of one partition's work markers. */
interface PartitionMarks {
  /** Ids with a marker. */
  ids: Set<string>
  /** False until the listing made when the partition was taken has come back. */
  complete: boolean
  /** Markers cleared while that listing was in flight: it may still name them. */
  cleared: Set<string>
}

/** One taking of a partition: a listing answers only the taking it was made for. */
export type Taking = object

/**
 * The work markers of the partitions this host owns, as their owner knows them, so that a read of an idle actor
 * needs no store round trip to learn whether work is in flight. Only an owner writes its partitions' markers: once
 * the listing made when it took a partition (the one that resumes its work) has come back, every later change is
 * one this host made itself. Until then, and for partitions not owned here, the answer is "unknown".
 */
export class WorkMarks {
  private readonly parts = new Map<number, PartitionMarks>()

  /** Partition p is served here from now; its markers are being listed for the taking returned. */
  begin(p: number): Taking {
    const part: PartitionMarks = { ids: new Set(), complete: false, cleared: new Set() }
    this.parts.set(p, part)
    return part
  }

  /** The listing made for `taking` of partition p came back with these ids (a listing for an earlier taking is stale). */
  listed(p: number, taking: Taking, ids: readonly string[]): void {
    const part = this.parts.get(p)
    if (!part || part !== taking || part.complete) return
    for (const id of ids) if (!part.cleared.has(id)) part.ids.add(id)
    part.complete = true
    part.cleared.clear()
  }

  /** Partition p went to another host: what it knew of it may change there. */
  drop(p: number): void {
    this.parts.delete(p)
  }

  /** This host set (or is about to set) the marker of `id`. */
  mark(id: string): void {
    const part = this.parts.get(partitionOf(id))
    if (!part) return
    part.ids.add(id)
    part.cleared.delete(id)
  }

  /** This host cleared the marker of `id`. */
  unmark(id: string): void {
    const part = this.parts.get(partitionOf(id))
    if (!part) return
    part.ids.delete(id)
    if (!part.complete) part.cleared.add(id)
  }

  /** Whether `id` has a marker; undefined when this host does not know (the store must be asked). */
  has(id: string): boolean | undefined {
    const part = this.parts.get(partitionOf(id))
    return part?.complete ? part.ids.has(id) : undefined
  }
}
