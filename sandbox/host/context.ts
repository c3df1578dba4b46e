/** What every host tool needs besides its input. */
export interface ToolContext {
  workdir: string
  maxOutputChars: number
  signal?: AbortSignal
}

/** Raised by long-running tools when the turn is aborted; the sandbox reports it as interrupted. */
export class InterruptedError extends Error {
  constructor() {
    super('interrupted')
  }
}

export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new InterruptedError()
}
