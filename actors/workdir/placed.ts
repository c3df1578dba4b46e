import type { Logger } from 'pino'
import { errorResult, type ToolResult } from '../../sandbox/types.js'

/**
 * What a mount puts in the session's directory before each tool (its files, its skills): done again only when what
 * is wanted changed since the last pass that succeeded, told by a key of the wanted set. A pass that fails answers the
 * tool with why instead of running it, and the next tool tries again.
 */
export class Placed {
  /** The set put in place last, as a key; undefined before the first pass and after a failed one. */
  private key: string | undefined

  /** `what` names the things in messages ("files", "skills"); `where`, where the tools see them. */
  constructor(
    private readonly what: string,
    private readonly where: string,
    private readonly session: string,
    private readonly log: Logger,
  ) {}

  /** `want` in place through `pass` (unless it already is); when that failed, the result to answer the tool with. */
  async ready(want: ReadonlyMap<string, string>, signal: AbortSignal | undefined, pass: () => Promise<void>): Promise<ToolResult | undefined> {
    const key = JSON.stringify([...want])
    if (key === this.key) return undefined
    try {
      await pass()
      this.key = key
      return undefined
    } catch (err) {
      const why = signal?.aborted ? 'interrupted' : (err as Error).message
      this.log.warn({ session: this.session, err }, `the session's ${this.what} could not be put in place; the tool does not run`)
      return errorResult(`The session's ${this.what} could not be put in place under ${this.where} (${why}); the tool did not run. Try again.`)
    }
  }
}
