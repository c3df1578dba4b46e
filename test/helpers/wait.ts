/**
 * Polls `probe` until it returns something truthy, and returns that; bounded, so a broken service fails the test
 * instead of hanging it. The one way tests wait for a condition: never a fixed sleep standing in for one.
 * Defaults: 30 s at most, a look every 25 ms.
 */
type Falsy = undefined | null | false | 0 | ''

export async function until<T>(what: string, probe: () => T | Falsy | Promise<T | Falsy>, ms = 30_000, everyMs = 25): Promise<T> {
  const end = Date.now() + ms
  for (;;) {
    const v = await probe()
    if (v) return v as T
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, everyMs))
  }
}
