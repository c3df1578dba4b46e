import JSZip from 'jszip'
import type { FileBytes } from '../../../protocol/files.js'

/** What the cache may hold, in characters (SKILL.md texts are usually a few KB; one may be megabytes). */
const DEFAULT_MAX_CHARS = 8 * 1024 * 1024

/**
 * The `SKILL.md` of skill versions, as the `Skill` tool injects it: read from the version's canonical zip in the skill
 * bundles' store (its root directory is the skill's name, gateway/skill-bundle.ts), kept by object name (a version's
 * bytes never change) while they fit in `maxChars`, least recently used first out. The session's host reads it, not
 * the sandbox's: with sandbox hosts the session's host has no unpacked copy. Only SKILL.md is inflated.
 */
export class SkillTexts {
  private readonly texts = new Map<string, string>()
  private readonly loading = new Map<string, Promise<string>>()
  private chars = 0

  /** `maxChars`: default 8 Mi characters. */
  constructor(
    private readonly bundles: Pick<FileBytes, 'read'>,
    private readonly maxChars = DEFAULT_MAX_CHARS,
  ) {}

  /** What is cached, without reading: undefined when not. */
  peek(object: string): string | undefined {
    const text = this.texts.get(object)
    if (text !== undefined) {
      this.texts.delete(object)
      this.texts.set(object, text)
    }
    return text
  }

  /** The SKILL.md of the bundle `object` (skill `name`); rejects when the store cannot give it. */
  get(object: string, name: string): Promise<string> {
    const cached = this.peek(object)
    if (cached !== undefined) return Promise.resolve(cached)
    let p = this.loading.get(object)
    if (!p) {
      p = this.load(object, name).finally(() => this.loading.delete(object))
      this.loading.set(object, p)
    }
    return p
  }

  private async load(object: string, name: string): Promise<string> {
    const chunks = await this.bundles.read(object)
    if (!chunks) throw new Error(`its bundle ${object} is not in the skill bundles' store`)
    const parts: Uint8Array[] = []
    for await (const c of chunks) parts.push(c)
    const zip = await JSZip.loadAsync(Buffer.concat(parts))
    const entry = zip.file(`${name}/SKILL.md`)
    if (!entry) throw new Error(`its bundle ${object} holds no ${name}/SKILL.md`)
    const text = await entry.async('string')
    this.keep(object, text)
    return text
  }

  private keep(object: string, text: string): void {
    if (text.length > this.maxChars) return
    this.texts.set(object, text)
    this.chars += text.length
    for (const [k, v] of this.texts) {
      if (this.chars <= this.maxChars) break
      this.texts.delete(k)
      this.chars -= v.length
    }
  }
}
