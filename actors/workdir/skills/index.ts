/** A session's custom skills unpacked read-only into its directory (mounts.ts; unpacked off the event loop: unpack*.ts). */
export { type SkillBundles, type SkillMount, SkillMounts } from './mounts.js'
