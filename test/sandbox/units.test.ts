import t from 'tap'
import { globToRegExp, staticPrefix } from '../../sandbox/host/glob-pattern.js'
import { cleanTerminalText } from '../../sandbox/host/terminal-text.js'
import { capOutput } from '../../sandbox/output-cap.js'

t.test('capOutput', async (t) => {
  t.equal(capOutput('short', 10), 'short')
  t.equal(capOutput('0123456789abc', 10), '0123456789\n[output truncated: showed 10 of 13 characters]')
  t.equal(capOutput('kept', 10, 500), 'kept\n[output truncated: showed 4 of 500 characters]', 'counts dropped data')
  t.equal(capOutput('ab😀cd', 3), 'ab\n[output truncated: showed 2 of 6 characters]', 'no split surrogate pair')
})

t.test('globToRegExp', async (t) => {
  const cases: Array<[string, string, boolean]> = [
    ['**/*.ts', 'a.ts', true],
    ['**/*.ts', 'x/y/a.ts', true],
    ['**/*.ts', 'a.tsx', false],
    ['*.ts', 'x/a.ts', false],
    ['src/**/a.ts', 'src/a.ts', true],
    ['src/**/a.ts', 'src/p/q/a.ts', true],
    ['src/**', 'src/p/q', true],
    ['?.md', 'a.md', true],
    ['?.md', 'ab.md', false],
    ['[abc].txt', 'b.txt', true],
    ['[!abc].txt', 'b.txt', false],
    ['[a-c]x', 'cx', true],
    ['*.{js,ts}', 'm.ts', true],
    ['*.{js,ts}', 'm.py', false],
    ['{src,lib/{a,b}}/*.c', 'lib/b/x.c', true],
    ['a+b(c).txt', 'a+b(c).txt', true],
    ['\\*.txt', '*.txt', true],
    ['\\*.txt', 'a.txt', false],
    ['*', '.env', true],
    ['a**b', 'axxb', true],
    ['a**b', 'a/b', false],
  ]
  for (const [pattern, p, expected] of cases) {
    t.equal(globToRegExp(pattern).test(p), expected, `${pattern} ~ ${p}`)
  }
  t.same(staticPrefix('src/lib/**/*.ts'), { prefix: 'src/lib', rest: '**/*.ts' })
  t.same(staticPrefix('a/b.txt'), { prefix: 'a', rest: 'b.txt' })
  t.same(staticPrefix('*.ts'), { prefix: '', rest: '*.ts' })
})

t.test('cleanTerminalText', async (t) => {
  t.equal(cleanTerminalText('\x1b[1;31mred\x1b[0m\r\n'), 'red\n')
  t.equal(cleanTerminalText('\x1b]0;title\x07text'), 'text')
  t.equal(cleanTerminalText('10%\r50%\r100%\r\n'), '100%\n')
  t.equal(cleanTerminalText('hello\rab'), 'abllo')
  t.equal(cleanTerminalText('abc\bd'), 'abd')
  t.equal(cleanTerminalText('tab\tok\x07'), 'tab\tok')
})
