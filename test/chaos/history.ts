// What the run left behind, read once the sessions settled: each session's stored history (through the official
// client's paging, as a user would read it) and the tags its bash tool calls appended.
import { readFileSync } from 'node:fs'
import type Anthropic from '@anthropic-ai/sdk'

/** A session's history, or why it could not be read. */
export type History = { events: any[] } | { error: string }

export async function readHistories(client: Anthropic, sessions: string[]): Promise<Map<string, History>> {
  const out = new Map<string, History>()
  // A few at a time: the machine is shared, and the client retries each page by itself.
  const queue = [...sessions]
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      for (let s = queue.shift(); s; s = queue.shift()) {
        try {
          const events: any[] = []
          for await (const e of client.beta.sessions.events.list(s, { limit: 1000 } as any)) events.push(e)
          out.set(s, { events })
        } catch (err) {
          out.set(s, { error: (err as Error).message })
        }
      }
    }),
  )
  return out
}

/** One line per bash run: `<tag> <tool use id>`. */
export interface TagLine {
  tag: string
  toolUseId: string
}

/** Each session's bash runs, from every file its runs may have appended to (`files`: on each host, in a sandbox). */
export function readTags(files: (session: string) => string[], sessions: string[]): Map<string, TagLine[]> {
  const out = new Map<string, TagLine[]>()
  for (const s of sessions) {
    let text = ''
    for (const f of files(s)) {
      try {
        text += readFileSync(f, 'utf8')
      } catch {}
    }
    out.set(
      s,
      text
        .split('\n')
        .filter(Boolean)
        .map((l) => {
          const [tag = '', toolUseId = ''] = l.split(' ')
          return { tag, toolUseId }
        }),
    )
  }
  return out
}
