import { FileKind } from '../../protocol/ops/file.js'
import { SessionKind } from '../../protocol/ops/session.js'
import type { FileBytes } from '../../protocol/files.js'
import type { ActorClient } from '../kit/index.js'
import { isMissing } from './calls.js'
import { sessionOf, transcriptFileOf } from './state.js'

/** Where the dream's session finds the transcripts: read-only file resources beneath its uploads. */
export const TRANSCRIPTS_DIR = '/mnt/session/uploads/transcripts'

/** A transcript is cut past this many bytes of Markdown (a note says so): the model reads it whole or not at all. */
const MAX_TRANSCRIPT_BYTES = 2 * 1024 * 1024
/** A tool's input or result is cut past this many characters: what it did matters more than every byte of it. */
const MAX_BLOCK_CHARS = 4000

/** One transcript file: its name (without `.md`) and the sessions it holds, in order. */
export interface TranscriptFile {
  name: string
  sessions: string[]
}

/**
 * The transcript files of `sessions` (sorted): one per session, unless the session's resources cannot hold that many
 * (`room`, what is left of its 100 beside the stores): then as many files as fit, sessions shared out in order.
 */
export function transcriptFiles(sessions: readonly string[], room: number): TranscriptFile[] {
  if (sessions.length <= room) return sessions.map((s) => ({ name: s, sessions: [s] }))
  const per = Math.ceil(sessions.length / room)
  const files: TranscriptFile[] = []
  for (let i = 0; i < sessions.length; i += per) files.push({ name: `sessions-${files.length + 1}`, sessions: sessions.slice(i, i + per) })
  return files
}

/** The mount path of a transcript file in the dream's session. */
export const transcriptPath = (f: TranscriptFile) => `${TRANSCRIPTS_DIR}/${f.name}.md`

type Event = Record<string, unknown> & { type: string }

const cut = (s: string, max = MAX_BLOCK_CHARS) => (s.length > max ? `${s.slice(0, max)}\n… (${s.length - max} more characters cut)` : s)

/** The text of a content array (text blocks; anything else named by its type). */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  return content.map((b: { type?: string; text?: unknown }) => (b.type === 'text' && typeof b.text === 'string' ? b.text : `[${b.type ?? 'block'}]`)).join('\n')
}

/** One event as Markdown, or nothing for the events that say nothing of the conversation (statuses, spans). */
function render(e: Event): string | undefined {
  switch (e.type) {
    case 'user.message':
      return `### User\n\n${textOf(e.content)}`
    case 'agent.message':
      return `### Agent\n\n${textOf(e.content)}`
    case 'agent.tool_use':
    case 'agent.custom_tool_use':
    case 'agent.mcp_tool_use':
      return `### Tool call: ${String(e.name)}\n\n\`\`\`json\n${cut(JSON.stringify(e.input ?? {}))}\n\`\`\``
    case 'agent.tool_result':
    case 'agent.mcp_tool_result':
    case 'user.custom_tool_result':
      return `### Tool result${e.is_error ? ' (error)' : ''}\n\n\`\`\`\n${cut(textOf(e.content))}\n\`\`\``
    case 'user.define_outcome':
      return `### Outcome asked for\n\n${cut(String(e.description ?? ''))}`
    case 'session.error': {
      const err = e.error as { message?: string } | undefined
      return `### Session error\n\n${err?.message ?? ''}`
    }
    default:
      return undefined
  }
}

/** One session's transcript as Markdown, read from its history in order (cut at MAX_TRANSCRIPT_BYTES). */
async function transcript(client: ActorClient, sessionId: string, rid: string): Promise<string> {
  const s = await client.call(SessionKind.ops.get, { id: sessionId, rid })
  const parts = [`# Session ${s.id}${s.title ? `: ${s.title}` : ''}\n\nCreated ${s.created_at}; agent ${s.agent.name} (${s.agent.id}).`]
  let bytes = Buffer.byteLength(parts[0]!)
  let page: string | undefined
  do {
    const got = await client.call(SessionKind.ops['events.list'], {
      id: sessionId,
      rid,
      query: { order: 'asc', limit: 1000, ...(page ? { page } : {}) } as never,
    })
    for (const e of got.data as unknown as Event[]) {
      const md = render(e)
      if (md === undefined) continue
      bytes += Buffer.byteLength(md) + 2
      if (bytes > MAX_TRANSCRIPT_BYTES) {
        parts.push(`(The rest of this transcript is cut: it passed ${MAX_TRANSCRIPT_BYTES} bytes.)`)
        return `${parts.join('\n\n')}\n`
      }
      parts.push(md)
    }
    page = got.next_page ?? undefined
  } while (page)
  return `${parts.join('\n\n')}\n`
}

/**
 * Writes each transcript file as a File scoped to the dream's session (its id from the dream's and the file's name, so
 * a repeat after a crash finds it), which the session then mounts read-only. The files' ids, in order.
 */
export async function writeTranscripts(
  deps: { client: ActorClient; files: FileBytes },
  dreamId: string,
  files: readonly TranscriptFile[],
  rid: string,
): Promise<string[]> {
  const ids: string[] = []
  for (const f of files) {
    const id = transcriptFileOf(dreamId, f.name)
    ids.push(id)
    const had = await deps.client.call(FileKind.ops.get, { id, rid }).catch((err: unknown) => {
      if (isMissing(err)) return undefined
      throw err
    })
    if (had) continue
    const texts: string[] = []
    for (const s of f.sessions) texts.push(await transcript(deps.client, s, rid))
    const bytes = Buffer.from(texts.join('\n---\n\n'))
    // Named by its id (no attempt suffix): a repeat stores the same name again, and the record names it once.
    const stored = await deps.files.put(id, new Blob([bytes]).stream())
    await deps.client.call(FileKind.ops.create, {
      rid,
      body: { id, filename: `${f.name}.md`, mime_type: 'text/markdown', size_bytes: stored.size, scope_id: sessionOf(dreamId), digest: stored.digest },
    })
  }
  return ids
}
