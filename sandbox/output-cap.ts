/**
 * Truncates `text` to at most `max` characters and says so in a final line, so the model
 * knows it is looking at a prefix rather than the whole output.
 * `totalChars` lets callers that already dropped data (e.g. a streaming reader) report the
 * real size instead of the size of what they kept.
 */
export function capOutput(text: string, max: number, totalChars = text.length): string {
  if (text.length <= max && totalChars <= text.length) return text
  let shown = Math.min(text.length, max)
  // Never split a surrogate pair: a lone high surrogate becomes U+FFFD downstream.
  const last = text.charCodeAt(shown - 1)
  if (shown > 0 && last >= 0xd800 && last <= 0xdbff) shown -= 1
  const head = text.slice(0, shown)
  const sep = head.endsWith('\n') || head.length === 0 ? '' : '\n'
  return `${head}${sep}[output truncated: showed ${shown} of ${Math.max(totalChars, text.length)} characters]`
}
