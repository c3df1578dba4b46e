/**
 * The rules a skill bundle is held to, in one place: SKILL.md frontmatter `name` and `description` as the vendor
 * publishes them, the bundle limits, and the directory-name rule. Pure; the gateway's bundle validator applies them.
 */

/**
 * Frontmatter field rules, from the vendor's Agent Skills overview, "Skill structure" → "Field requirements":
 * https://platform.claude.com/docs/en/agents-and-tools/agent-skills/overview (read 2026-11-27; the text also checked
 * against a stored verbatim copy of that section). It says:
 *   name: maximum 64 characters; only lowercase letters, numbers, and hyphens; no XML tags; no reserved words
 *         "anthropic", "claude".
 *   description: must be non-empty; maximum 1024 characters; no XML tags.
 * The agentskills.io open standard adds rules for leading, trailing and double hyphens; the vendor's upload rules do
 * not, so neither do we (a bundle the vendor accepts is accepted here).
 */
export const SKILL_NAME_MAX_CHARS = 64
export const SKILL_NAME_PATTERN = /^[a-z0-9-]+$/
export const SKILL_NAME_RESERVED_WORDS = ['anthropic', 'claude'] as const
export const SKILL_DESCRIPTION_MAX_CHARS = 1024

/**
 * What counts as an XML tag: `<`, an optional `/`, a letter, then anything but angle brackets up to `>` (`<example>`,
 * `</b>`, `<br/>`, `<a href="x">`). A lone `<` or `a < b > c` is prose, not a tag.
 */
const XML_TAG = /<\/?[A-Za-z][^<>]*>/

/** Characters as the vendor counts them (code points, not UTF-16 units). */
const chars = (s: string) => [...s].length

/** The problem with a frontmatter `name`, naming the field and the rule, or undefined when it is valid. */
export function nameProblem(name: unknown): string | undefined {
  if (typeof name !== 'string' || name.length === 0) return 'SKILL.md frontmatter `name` is required and must be a non-empty string'
  if (chars(name) > SKILL_NAME_MAX_CHARS) return `SKILL.md frontmatter \`name\` must be at most ${SKILL_NAME_MAX_CHARS} characters (got ${chars(name)})`
  if (XML_TAG.test(name)) return 'SKILL.md frontmatter `name` must not contain XML tags'
  if (!SKILL_NAME_PATTERN.test(name)) return 'SKILL.md frontmatter `name` may contain only lowercase letters, digits and hyphens'
  const reserved = SKILL_NAME_RESERVED_WORDS.find((w) => name.includes(w))
  if (reserved) return `SKILL.md frontmatter \`name\` must not contain the reserved word "${reserved}"`
  return undefined
}

/** The problem with a frontmatter `description`, naming the field and the rule, or undefined when it is valid. */
export function descriptionProblem(description: unknown): string | undefined {
  if (typeof description !== 'string') return 'SKILL.md frontmatter `description` is required and must be a string'
  if (description.trim().length === 0) return 'SKILL.md frontmatter `description` must be non-empty'
  if (chars(description) > SKILL_DESCRIPTION_MAX_CHARS)
    return `SKILL.md frontmatter \`description\` must be at most ${SKILL_DESCRIPTION_MAX_CHARS} characters (got ${chars(description)})`
  if (XML_TAG.test(description)) return 'SKILL.md frontmatter `description` must not contain XML tags'
  return undefined
}

/**
 * The directory-name rule (SPEC.md "Skill and skill version"): the top-level directory equals `name` after case and
 * underscore normalisation, so `My_Skill/` holds the skill `my-skill`.
 */
export const normalizeSkillDirName = (dir: string): string => dir.toLowerCase().replaceAll('_', '-')

const MiB = 1024 * 1024

/**
 * Bundle limits. Upload size and file count are SPEC.md's ("Skill upload size: below 30 MB, at most 1,000 files").
 * MB is read as 10^6 bytes, the stricter of the two readings, so nothing the vendor would refuse for size passes here.
 * For a zip the limit applies to the archive's bytes; for path-qualified files, to the sum of their bytes.
 */
export const SKILL_UPLOAD_MAX_BYTES = 30 * 1000 * 1000
export const SKILL_MAX_FILES = 1000

/**
 * Directory entries are not files, but each still costs a central-directory record: `zip -r` writes one per
 * directory, so a bundle of 1,000 files may carry some; more than this many is no bundle anyone packed by hand.
 */
export const SKILL_MAX_DIRECTORY_ENTRIES = 1000

/**
 * Zip-bomb bound on the total expansion, declared (the central directory's sizes, checked before inflating anything)
 * and actual (bytes counted while inflating; inflation stops once past it). 100 MiB: a maximal 30 MB upload of text,
 * which deflates about 3–4×, expands to about this much, so no honest bundle comes near it; it keeps a worker's memory
 * for one bundle near 100 MiB; and five such skills stay within a session's 500 MB aggregate expanded size (SPEC.md
 * limits), so one skill cannot take a session's whole allowance by itself.
 */
export const SKILL_MAX_EXPANDED_BYTES = 100 * MiB

/**
 * Per-entry bound on the declared compression ratio (expanded ÷ compressed), for entries expanding past
 * `SKILL_RATIO_EXEMPT_BYTES`. Source and prose deflate 3–10×, logs and CSV up to about 50×, and deflate's ceiling is
 * about 1,032×: an entry above 200× is near-pure repetition, the shape of a bomb, not of instructions or scripts.
 * Small entries are exempt: a 1 MiB file of spaces is harmless however well it compresses.
 */
export const SKILL_MAX_ENTRY_RATIO = 200
export const SKILL_RATIO_EXEMPT_BYTES = MiB

/**
 * A session's skills (SPEC.md limits, "Custom skills per session", "Aggregate expanded skill size"): checked when it
 * is created, over the effective list (the agent's, or the session's override). MB as 10^6 bytes, as above.
 */
export const SESSION_MAX_SKILLS = 500
export const SESSION_MAX_SKILL_EXPANDED_BYTES = 500 * 1000 * 1000

/**
 * Discovery (SPEC session create rule 10): the `Skill` tool's description lists every skill by name, with descriptions
 * while they fit in this share of the configured context window (`TROUPE_CONTEXT_WINDOW`), counted in estimated
 * tokens; the rest are listed by name only, still invocable.
 */
export const SKILL_DESCRIPTION_BUDGET_SHARE = 0.01

/** Compaction (SPEC limits "Skill compaction budget"): what injected SKILL.md text may keep, in estimated tokens. */
export const SKILL_COMPACTION_TOKENS_PER_SKILL = 5_000
export const SKILL_COMPACTION_TOKENS_SHARED = 25_000

/**
 * Estimated tokens of a text: about four characters a token for English prose and code (the vendor's rule of thumb),
 * rounded up. Only budgets use it; nothing is billed by it.
 */
export const estimateTokens = (text: string): number => Math.ceil(text.length / 4)
