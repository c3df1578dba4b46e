/**
 * Label values that stay few. A label is never an id (a session's, an agent's, a request's): each value is a series
 * kept for the life of the process, and Prometheus pays for every one.
 */

/** Status codes as label values, made once: a request's status picks one, building no string. */
const STATUS = Array.from({ length: 600 }, (_, i) => String(i))

/** `status` as a label value: a code from 100 to 599, else `other`. */
export const statusLabel = (status: number): string => (Number.isInteger(status) && status >= 100 && status < 600 ? STATUS[status]! : 'other')

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])

/** An HTTP method as a label value: the usual ones, else `other` (a client may send any token). */
export const methodLabel = (method: string): string => (METHODS.has(method) ? method : 'other')

/**
 * Values a user chooses (a model's name) as label values: the first `max` distinct ones as they are, every later
 * one (and any longer than `maxLength`) as `other`. Default 32 values of at most 64 characters.
 */
export class LabelCap {
  private readonly seen = new Set<string>()

  constructor(
    private readonly max = 32,
    private readonly maxLength = 64,
  ) {}

  of(value: string): string {
    if (this.seen.has(value)) return value
    if (this.seen.size >= this.max || value.length > this.maxLength) return 'other'
    this.seen.add(value)
    return value
  }
}
