import type { Dream } from '../../protocol/schemas/dream.js'
import { TRANSCRIPTS_DIR } from './transcripts.js'

/**
 * The system prompt of a dream's agent: what a dream is for, where its inputs and its output are (the mounts are listed
 * after it by the session, each with its instructions), and the creator's `instructions`.
 */
export function dreamSystem(d: Dream): string {
  const lines = [
    'You are dreaming: an offline pass that curates a memory store from what past sessions did, so that future sessions start out knowing it.',
    '',
    'What you read:',
    `- The transcripts of past sessions, as Markdown files beneath ${TRANSCRIPTS_DIR}/ (read-only).`,
    '- The memory stores listed at the end of this prompt: the one marked read-only is the store as it was.',
    '',
    'What you write: the memory store listed as read-write. Keep there what future sessions should remember: durable facts, decisions, preferences and lessons learned, one topic a file in clear folders; merge what is repeated, correct what the transcripts show is outdated, and remove what no longer holds. Each file at most 100 kB of UTF-8 text. Do not copy transcripts wholesale.',
    '',
    'When the store is in order, answer with a short summary of what you changed, and stop.',
  ]
  if (d.instructions) lines.push('', "The dream's instructions:", d.instructions)
  return lines.join('\n')
}

/** The message that starts the dream's session. */
export function dreamKickoff(d: Dream, transcripts: readonly string[]): string {
  const files = transcripts.length ? transcripts.map((p) => `- ${p}`).join('\n') : '(none: this dream reads no sessions)'
  return [`Dream ${d.id}: curate the read-write memory store.`, '', 'Transcripts:', files].join('\n')
}
