import { FenceLost } from './mailbox.js'
import { type RecordStore, UNKNOWN } from './store.js'

/**
 * One record as its single writer holds it: the revision it last read or wrote, which fences its next write. A
 * write that finds the record moved on (another host wrote it: this one lost its partition without noticing, or a
 * previous owner's write landed late) throws `FenceLost`, which steps the actor down (see Mailbox).
 */
export class FencedRecord<T> {
  constructor(
    private readonly store: RecordStore<T>,
    readonly key: string,
    /** The revision read; 0 when there was no record (the first write creates it). */
    private revision: number,
  ) {}

  /** The record as stored now, fenced at what was read; undefined when there is none. */
  static async read<T>(store: RecordStore<T>, key: string): Promise<{ value: T; record: FencedRecord<T> } | undefined> {
    const cur = await store.get(key)
    return cur && { value: cur.value, record: new FencedRecord(store, key, cur.revision) }
  }

  /** Stores a new record, fenced at what was written; false when the key exists. */
  static async create<T>(store: RecordStore<T>, key: string, value: T): Promise<FencedRecord<T> | false> {
    const rev = await store.create(key, value)
    return rev !== false && new FencedRecord(store, key, rev)
  }

  /** Stores `next` if the record is still as this writer last saw it (`was`, when the writer holds it). */
  async write(next: T, was: T | typeof UNKNOWN = UNKNOWN): Promise<void> {
    const rev = this.revision ? await this.store.update(this.key, next, this.revision, was) : await this.store.create(this.key, next)
    if (rev === false) throw new FenceLost(`${this.key} was written by another host`)
    this.revision = rev
  }

  /** Deletes the record if it is still as this writer last saw it (`was`, when the writer holds it). */
  async delete(was: T | typeof UNKNOWN = UNKNOWN): Promise<void> {
    if (!this.revision) return
    if (!(await this.store.delete(this.key, this.revision, was))) throw new FenceLost(`${this.key} was written by another host`)
    this.revision = 0
  }
}
