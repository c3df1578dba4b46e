import type { Gaps } from './reads.js'

/** 850 ms → "0.9s", 75 s → "1m15s", 2 h → "2h0m", 3 days → "3d0h". */
export function age(ms: number): string {
  const s = Math.max(0, ms) / 1000
  if (s < 60) return `${s.toFixed(1)}s`
  if (s < 3600) return `${Math.floor(s / 60)}m${Math.floor(s % 60)}s`
  if (s < 86_400) return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`
  return `${Math.floor(s / 86_400)}d${Math.floor((s % 86_400) / 3600)}h`
}

/** An instant and how far it is from `now`: "2026-03-01T00:01:00.000Z (in 20.0s)", "… (4.1s ago)". */
export function when(iso: string, now: number): string {
  const d = Date.parse(iso) - now
  return `${iso} (${d >= 0 ? `in ${age(d)}` : `${age(-d)} ago`})`
}

/** A section's heading when there is nothing to list: its bucket does not exist yet, or it holds none. */
export function emptyHeading(name: string, bucket: string, gaps: Gaps): string {
  return gaps.missing.includes(bucket) ? `${name}: none yet (no ${bucket} bucket yet)` : `${name}: none yet`
}

/** What a section could not read, as lines under it. */
export function gapLines(gaps: Gaps, shown: readonly string[] = []): string[] {
  const missing = gaps.missing.filter((m) => !shown.includes(m))
  return [...(missing.length ? [`  not there yet: ${missing.join(', ')}`] : []), ...gaps.cut.map((c) => `  PARTIAL: ${c}`)]
}

/** Strings by code point (ids, RFC 3339 times): `localeCompare` would put punctuation and case by the locale's rules. */
export const byCodePoint = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)

/** 1 → "1 endpoint", 2 → "2 endpoints"; `many` for a plural not made with an s. */
export const count = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`
