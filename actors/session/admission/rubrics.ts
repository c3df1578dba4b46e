import { fail, inField } from '../../../protocol/errors/fail.js'
import type { FileReader } from '../../file/index.js'

/** The longest rubric, inline or read from a File (WIRE §7.1). */
export const RUBRIC_MAX_CHARS = 262_144

/**
 * File rubrics read as text (SPEC session create rule 5): before anything of the request is stored, so a missing or
 * unreadable File leaves nothing behind, and the outcome keeps the text whatever happens to the File later. `field(i)`
 * names event `i` in errors. Events without one are returned as they are.
 */
export async function resolveRubrics<E extends { type: string }>(files: FileReader, events: readonly E[], field: (i: number) => string): Promise<E[]> {
  return Promise.all(
    events.map(async (e, i) => {
      const rubric = (e as { rubric?: { type?: string; file_id?: string } }).rubric
      if (e.type !== 'user.define_outcome' || rubric?.type !== 'file' || !rubric.file_id) return e
      const at = `${field(i)}.rubric.file_id`
      const chunks = await files.read(rubric.file_id)
      if (!chunks) throw inFieldError(at, fail('file_not_found', rubric.file_id))
      const parts: Uint8Array[] = []
      let size = 0
      for await (const c of chunks) {
        size += c.length
        // Four bytes a character at most: past that, no text of the limit's length.
        if (size > RUBRIC_MAX_CHARS * 4) throw fail('rubric_file_unreadable', at, 'is longer than 262144 characters')
        parts.push(c)
      }
      let content: string
      try {
        content = new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(parts))
      } catch {
        throw fail('rubric_file_unreadable', at, 'is not UTF-8 text')
      }
      if (!content.length) throw fail('rubric_file_unreadable', at, 'is empty')
      if (content.length > RUBRIC_MAX_CHARS) throw fail('rubric_file_unreadable', at, 'is longer than 262144 characters')
      return { ...e, rubric: { type: 'text', content } }
    }),
  )
}

/** `err` with `field: ` in front of its message (a 404 about a field's id). */
function inFieldError(field: string, err: Error): Error {
  try {
    inField(field)(err)
  } catch (named) {
    return named as Error
  }
  return err
}
