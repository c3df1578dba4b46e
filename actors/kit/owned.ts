import { partitionOf } from '../../protocol/subjects.js'

/**
 * The partitions a partitioned kind serves on this host. `onChange` runs whenever one is gained or given away,
 * so a cache of the records of owned partitions drops that partition's entries (they may have changed
 * elsewhere while another host owned it).
 */
export class OwnedPartitions extends Set<number> {
  onChange: (partition: number) => void = () => undefined

  override add(p: number): this {
    this.onChange(p)
    return super.add(p)
  }

  override delete(p: number): boolean {
    this.onChange(p)
    return super.delete(p)
  }
}

/** The partition of a record key `<prefix><id>`; -1 for keys of other records. */
export const partitionOfKey =
  (prefix: string) =>
  (key: string): number =>
    key.startsWith(prefix) ? partitionOf(key.slice(prefix.length)) : -1
