import { fail } from '../../../protocol/errors/fail.js'
import type { EventOf, PayloadOf, ServiceEventType } from '../../../protocol/session-events.js'
import { type FileResource, fileResources } from '../../../protocol/schemas/resource.js'
import type { SessionUpdateInput } from '../../../protocol/schemas/session.js'
import type { Session } from '../../../protocol/session.js'
import type { Mailbox } from '../../kit/index.js'
import { capturedAgents, checkAddable, checkChangeable, updateChanges } from '../admission/index.js'
import { detachMemoryStores, dropCopies } from '../admission/index.js'
import { selfHostedOf, stopWork } from '../admission/index.js'
import { unpinSessionSkills } from '../admission/index.js'
import type { History } from '../history/index.js'
import type { McpPool } from '../../mcp/index.js'
import type { ActorDeps } from './deps.js'

/** What the changes need of the actor they change. */
export interface ChangeHost {
  readonly id: string
  readonly h: History
  readonly mb: Mailbox
  readonly deps: ActorDeps
  /** The session's MCP connections. */
  readonly mcp: McpPool
  /** A turn runs, or input waits for one. */
  hasWork(): boolean
  /** Records a service event and waits until it is stored. */
  record<T extends ServiceEventType>(type: T, fields: PayloadOf<T>): Promise<EventOf<T>>
  /** Writes the record now. */
  save(): Promise<void>
  /** The budget moved: a turn paused at the ceiling gets another look. */
  resumeIfPaused(): Promise<void>
  view(): Session
  /** The record, history, workdir and environment reference go; the actor leaves memory. */
  destroy(rid: string): Promise<void>
}

/**
 * The changes the handlers ask of a session (update, archive, resources, delete), run one at a time in arrival order,
 * each checked against the state it finds when its turn comes; beside the pump, which handles the client events. A
 * change that waits on something slow (a resource's copy) keeps the actor in memory meanwhile.
 */
export class Changes {
  private queue: Promise<unknown> = Promise.resolve()
  /** Changes asked and not yet done. */
  private pending = 0

  constructor(private readonly a: ChangeHost) {}

  /** Whether a change is asked and not yet done (it keeps the actor in memory). */
  get busy(): boolean {
    return this.pending > 0
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    this.pending++
    const run = this.queue.then(() => {
      this.a.mb.alive()
      return fn()
    })
    this.queue = run.catch(() => undefined)
    return run.finally(() => {
      this.pending--
    })
  }

  /** A session update (SPEC rules in admission/changes.ts), stored as `session.updated` before it answers. */
  update(b: SessionUpdateInput): Promise<Session> {
    return this.exclusive(async () => {
      const { h } = this.a
      const target = {
        session: h.session,
        busy: this.a.hasWork(),
        createdWithBudget: h.rec.budget_created,
        budgetRemoved: h.rec.budget_removed,
        consumed: h.liveTotals(),
        env: h.rec.env,
      }
      const changes = updateChanges(target, b)
      if (Object.keys(changes).length) {
        await this.a.record('session.updated', changes)
        await this.a.save()
        if ('budget' in changes) await this.a.resumeIfPaused()
        // The next turn offers the new servers' tools (connecting at its first listing); the removed ones' connections
        // close now. Roster members keep theirs.
        if (changes.agent) {
          const agent = changes.agent
          await this.a.mcp.retain([agent, ...capturedAgents(agent)].flatMap((x) => x.mcp_servers))
        }
      }
      return this.a.view()
    })
  }

  /** Archives the session (its `session.status_terminated`); not while it has work. Its work item, if any, stops. */
  archive(rid: string): Promise<Session> {
    return this.exclusive(async () => {
      if (this.a.h.session.archived_at) return this.a.view()
      // Input waiting in the mailbox is a turn about to start: archiving now would strand it (as for agent updates).
      if (this.a.hasWork()) throw fail('session_running', this.a.id)
      await this.a.record('session.status_terminated', {})
      await this.a.save()
      await stopWork(this.a.deps.ctx, selfHostedOf(this.a.h.rec), true, rid)
      return this.a.view()
    })
  }

  /**
   * Adds resource `r` once `copy.make` has made its file's copy: checked before the copy and again after it (it took
   * a while: the session may have started a turn or been archived meanwhile, and then the copy goes). A retry of an
   * add that was stored (the same id) answers as the first did, whatever the session does now.
   */
  addResource(r: FileResource, copy: { make(): Promise<unknown>; drop(): Promise<void> }): Promise<FileResource> {
    return this.exclusive(async () => {
      const prior = fileResources(this.a.h.session.resources).find((x) => x.id === r.id)
      if (prior) {
        if (prior.file_id !== r.file_id || prior.mount_path !== r.mount_path) throw fail('idempotency_key_reused')
        return prior
      }
      checkAddable(this.a.h.session, this.a.hasWork(), r.mount_path)
      await copy.make()
      try {
        this.a.mb.alive()
        checkAddable(this.a.h.session, this.a.hasWork(), r.mount_path)
      } catch (err) {
        await copy.drop()
        throw err
      }
      this.a.h.session.resources = [...this.a.h.session.resources, r]
      await this.a.save()
      return r
    })
  }

  /** Removes resource `id` from the session's record (its copy is the caller's to drop once this answers). */
  removeResource(id: string): Promise<FileResource> {
    return this.exclusive(async () => {
      checkChangeable(this.a.h.session, this.a.hasWork())
      // Only files have ids: a memory store stays attached for the session's life.
      const r = fileResources(this.a.h.session.resources).find((x) => x.id === id)
      if (!r) throw fail('session_resource_not_found', id, this.a.id)
      this.a.h.session.resources = this.a.h.session.resources.filter((x) => x !== r)
      await this.a.save()
      return r
    })
  }

  /**
   * Delete: the record goes first (the session is gone for readers), then its history, workdir and reference, its
   * work item, its resources' copies and its skill pins.
   */
  delete(rid: string): Promise<void> {
    return this.exclusive(async () => {
      await this.a.destroy(rid)
      const { ctx } = this.a.deps
      await stopWork(ctx, selfHostedOf(this.a.h.rec), true, rid)
      await dropCopies(ctx, this.a.id, this.a.h.session.resources, rid)
      await detachMemoryStores(ctx, this.a.id, this.a.h.session.resources, rid)
      await unpinSessionSkills(ctx.client, this.a.id, this.a.h.rec.skills ?? [], ctx.log)
    })
  }
}
