// Skills under faults (issue 27): versions are uploaded to a few skills and deleted through the balancer all through
// the run, so hosts die mid-upload and mid-delete. At the end, every listed version must download whole (a zip holding
// its SKILL.md), and once the hosts' sweeps (TROUPE_SWEEP_AGE_S, lowered here) and deletions' work have run, the
// bundles' store must hold exactly one object per listed version: nothing half-visible, nothing left behind.
import { randomBytes } from 'node:crypto'
import { toFile } from '@anthropic-ai/sdk'
import type Anthropic from '@anthropic-ai/sdk'
import { jetstream } from '@nats-io/jetstream'
import { Objm } from '@nats-io/obj'
import type { NatsConnection } from '@nats-io/transport-node'
import JSZip from 'jszip'
import { ObjectStores } from '../../protocol/subjects.js'

/** The churn's client name: its DELETE retried after a lost answer may find the version gone (a 404 it expects). */
export const SKILLS_CLIENT = 'skills'

/** What the hosts are started with: unrecorded bytes are swept once 10 s old (the default is 10 minutes). */
export const SKILL_SWEEP_ENV = { TROUPE_SWEEP_AGE_S: '10' }
const SKILLS = 3
const EVERY_MS = 700
/** How long the end waits for sweeps and deletions to leave one object per listed version. */
const CLEAN_WITHIN_MS = 60_000

export interface SkillData {
  uploads: { ok: number; failed: number }
  deletes: { ok: number; failed: number }
  versions: number
  /** Listed versions that did not download whole. */
  broken: string[]
  /** Skills whose store held other than one object per listed version once the wait was over. */
  leftovers: string[]
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export class SkillChurn {
  private readonly ids: string[] = []
  private readonly uploads = { ok: 0, failed: 0 }
  private readonly deletes = { ok: 0, failed: 0 }

  constructor(private readonly client: Anthropic) {}

  private async bundle(name: string) {
    return Promise.all([
      toFile(Buffer.from(`---\nname: ${name}\ndescription: Churned under faults.\n---\n\nBody.\n`), `${name}/SKILL.md`),
      toFile(randomBytes(4096), `${name}/data.bin`),
    ])
  }

  async start(): Promise<void> {
    for (let i = 0; i < SKILLS; i++) {
      const s = await this.client.beta.skills.create({ files: await this.bundle(`churn-${i}`) } as any)
      this.ids.push(s.id)
    }
  }

  /** Uploads and deletes until `endAt`; failures during faults are counted, not fatal. */
  /** Names this run's upload keys apart from another run's on the same store. */
  private readonly started = Date.now().toString(36)

  async run(endAt: number): Promise<void> {
    for (let n = 0; Date.now() < endAt; n++) {
      const i = n % SKILLS
      const id = this.ids[i]!
      try {
        if (n % 4 === 3) {
          const versions = (await this.client.beta.skills.versions.list(id, { limit: 100 } as any)).data
          if (versions.length >= 2) {
            await this.client.beta.skills.versions.delete(versions.at(-1)!.id, { skill_id: id })
            this.deletes.ok++
          }
        } else {
          // Keyed: an upload whose write got no answer (a NATS election) is retried, not refused as a 504.
          const key = `skill-${this.started}-${n}`
          await this.client.beta.skills.versions.create(id, { files: await this.bundle(`churn-${i}`) }, { headers: { 'Idempotency-Key': key } })
          this.uploads.ok++
        }
      } catch {
        if (n % 4 === 3) this.deletes.failed++
        else this.uploads.failed++
      }
      await sleep(EVERY_MS)
    }
  }

  async settle(nc: NatsConnection, client: Anthropic, say: (s: string) => void): Promise<SkillData> {
    const os = await new Objm(jetstream(nc)).open(ObjectStores.skills)
    const broken: string[] = []
    let versions = 0
    let leftovers: string[] = []
    const listed = new Map<string, string[]>()
    for (const id of this.ids) {
      const vs = (await client.beta.skills.versions.list(id, { limit: 100 } as any)).data
      listed.set(
        id,
        vs.map((v) => v.id),
      )
      versions += vs.length
      for (const v of vs) {
        const why = await client.beta.skills.versions
          .download(v.id, { skill_id: id })
          .then(async (r) => ((await JSZip.loadAsync(Buffer.from(await r.arrayBuffer()))).file(`${v.name}/SKILL.md`) ? undefined : 'no SKILL.md'))
          .catch((err: Error) => err.message)
        if (why) broken.push(`${id} version ${v.id}: ${why}`)
      }
    }
    const by = Date.now() + CLEAN_WITHIN_MS
    for (;;) {
      const objects = (await os.list()).map((o) => o.name)
      leftovers = this.ids.flatMap((id) => {
        const held = objects.filter((o) => o.startsWith(`${id}.`)).length
        const want = listed.get(id)!.length
        return held === want ? [] : [`${id}: ${held} objects for ${want} listed versions`]
      })
      if (!leftovers.length || Date.now() > by) break
      await sleep(1000)
    }
    say(
      `skills: ${this.uploads.ok} uploads (${this.uploads.failed} failed), ${this.deletes.ok} deletes (${this.deletes.failed} failed), ${versions} versions listed`,
    )
    return { uploads: this.uploads, deletes: this.deletes, versions, broken, leftovers }
  }
}
