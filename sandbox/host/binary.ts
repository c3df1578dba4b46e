/** Same heuristic as git and grep: a NUL byte near the start means "not text". */
export function isBinary(buf: Buffer): boolean {
  return buf.subarray(0, 8_000).includes(0)
}
