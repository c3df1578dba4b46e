// An SSE reader over fetch for tests: messages and comments as they arrive, every wait bounded.

/** Failure guard only: every wait ends on an event, this keeps a broken build from hanging. */
export function guard<T>(p: Promise<T>, what: string, ms = 10_000): Promise<T> {
  let timer: NodeJS.Timeout
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms)
  })
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer))
}

export interface SseMsg {
  event: string | undefined
  id: string | undefined
  data: string
  /** The raw lines of the message, to check framing. */
  raw: string
}

export function sseReader(res: Response) {
  const reader = res.body!.getReader()
  const dec = new TextDecoder()
  let buf = ''
  let ended = false
  const messages: SseMsg[] = []
  const comments: string[] = []
  const parse = () => {
    let i: number
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i)
      buf = buf.slice(i + 2)
      const m: SseMsg = { event: undefined, id: undefined, data: '', raw: block }
      let isComment = true
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) continue
        isComment = false
        const c = line.indexOf(':')
        const field = line.slice(0, c)
        const value = line.slice(c + 1).replace(/^ /, '')
        if (field === 'event') m.event = value
        else if (field === 'id') m.id = value
        else if (field === 'data') m.data = m.data ? `${m.data}\n${value}` : value
      }
      if (isComment) comments.push(block)
      else messages.push(m)
    }
  }
  const pull = async (what: string) => {
    const { done, value } = await guard(reader.read(), what)
    if (done) ended = true
    else {
      buf += dec.decode(value, { stream: true })
      parse()
    }
  }
  return {
    messages,
    comments,
    get ended() {
      return ended
    },
    /** Waits until a comment with this text arrived. */
    async untilComment(text: string): Promise<void> {
      while (!comments.includes(text)) {
        if (ended) throw new Error(`stream ended before the comment ${text}`)
        await pull(`comment ${text}`)
      }
    },
    /** Waits until `n` messages arrived in total; the first `n`. */
    async take(n: number): Promise<SseMsg[]> {
      while (messages.length < n) {
        if (ended) throw new Error(`stream ended after ${messages.length} of ${n} messages`)
        await pull(`${n} messages (have ${messages.length})`)
      }
      return messages.slice(0, n)
    },
    async toEnd(): Promise<SseMsg[]> {
      while (!ended) await pull('end of stream')
      return messages
    },
    cancel: () => reader.cancel().catch(() => undefined),
  }
}
