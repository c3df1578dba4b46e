import { MAX_CONTENT_BYTES } from '../../../protocol/memory-rules.js'
import { type MemoryStoreResource, memoryResources, type SessionResource } from '../../../protocol/schemas/resource.js'

/**
 * A session's memory stores as the model is told of them (issue 42 point 4): after the agent's system prompt, one
 * section naming each mount, its access, the store's name and description (as snapshotted when it was attached) and
 * the attachment's `instructions`. A session without stores gets its agent's prompt unchanged.
 */
export function systemWithMemory(system: string | null, resources: readonly SessionResource[]): string | null {
  const stores = memoryResources(resources)
  if (!stores.length) return system
  const section = [
    '<memory_stores>',
    'These memory stores are mounted as directories of text files. What is in them outlives this session: other sessions',
    'that attach the same store read and write the same files. Look in them before work that earlier sessions may have',
    'learned about, and keep there what later ones should know (one topic a file, plain text or Markdown; each file at',
    `most ${MAX_CONTENT_BYTES} bytes of UTF-8). A read-only store cannot be changed.`,
    ...stores.map(describe),
    '</memory_stores>',
  ].join('\n')
  return system ? `${system}\n\n${section}` : section
}

function describe(r: MemoryStoreResource): string {
  const access = r.access === 'read_only' ? 'read-only' : 'read-write'
  const lines = [`- ${r.mount_path} (${access}): ${r.name}${r.description ? `: ${r.description}` : ''}`]
  if (r.instructions) lines.push(`  Instructions: ${r.instructions}`)
  return lines.join('\n')
}
