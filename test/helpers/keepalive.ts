import t from 'tap'

/**
 * Servers under test are unref'd so the test process can reach its end and run tap's root teardown. While
 * a test runs, though, an await on an unref'd socket would let the process exit mid-test: hold it open for
 * the duration of every test.
 */
let depth = 0
let timer: NodeJS.Timeout | undefined
t.beforeEach(() => {
  if (depth++ === 0) timer = setInterval(() => undefined, 1 << 30)
})
t.afterEach(() => {
  if (--depth === 0) clearInterval(timer)
})
