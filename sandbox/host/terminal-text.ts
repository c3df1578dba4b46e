// biome-ignore-all lint/suspicious/noControlCharactersInRegex: matching control characters is this file's purpose.
// Escape sequences a pty may carry: CSI (colours, cursor moves), OSC (titles, hyperlinks),
// charset selection, and the remaining two-byte ESC forms.
const CSI = /\x1b\[[0-?]*[ -/]*[@-~]/g
const OSC = /\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?/g
const CHARSET = /\x1b[()*+][0-9A-Za-z]/g
const ESC2 = /\x1b[@-Z\\-_=>]/g
// Control characters other than \t and \n, after \r and \b have been interpreted.
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f]/g

/**
 * Turns raw pty output into what a reader of the terminal would see: escape sequences
 * removed, CRLF normalised, and carriage-return overwrites (progress bars) collapsed so a
 * model is not fed every intermediate frame.
 */
export function cleanTerminalText(raw: string): string {
  const text = raw.replace(OSC, '').replace(CSI, '').replace(CHARSET, '').replace(ESC2, '').replace(/\r+\n/g, '\n')
  return text.split('\n').map(overwriteLine).join('\n').replace(CONTROL, '')
}

function overwriteLine(line: string): string {
  if (!line.includes('\r') && !line.includes('\b')) return line
  let out = ''
  let col = 0
  for (const ch of line) {
    if (ch === '\r') col = 0
    else if (ch === '\b') col = Math.max(0, col - 1)
    else {
      out = out.slice(0, col) + ch + out.slice(col + 1)
      col += 1
    }
  }
  return out
}
