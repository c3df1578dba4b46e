import { fail, inField } from '../../protocol/errors/fail.js'
import { AgentKind } from '../../protocol/ops/agent.js'
import { EnvironmentKind } from '../../protocol/ops/environment.js'
import { FileKind } from '../../protocol/ops/file.js'
import { MemoryStoreKind } from '../../protocol/ops/memory.js'
import { isFileParams, isMemoryStoreParams, type ResourceParamsT } from '../../protocol/schemas/resource.js'
import type { AgentReference } from '../../protocol/schemas/agent.js'
import type { DeploymentAgentParamsT } from '../../protocol/schemas/deployment.js'
import type { SessionAgent } from '../../protocol/session.js'
import type { ActorClient, HostSettings } from '../kit/index.js'
import { agentResolver, checkMcpEgress, checkVaultRefs, prefixed, snapshotAgent, type AgentResolver } from '../session/index.js'

/**
 * What a deployment's create and update check against other kinds: the agent it pins and the environment it names,
 * with the errors a session create gives for them, so a deployment accepted is one whose runs can create sessions.
 * The rules that need no stored state are the session's own (session/admission.ts#checkCreateInput).
 */
export class DeploymentAdmission {
  /** Pins: refuses archived agents (the agent kind's resolve). */
  private readonly resolve: AgentResolver
  /** Reads a pin already made: an agent archived since is still read (a budget check on update needs its models). */
  private readonly read: AgentResolver

  constructor(
    private readonly client: ActorClient,
    private readonly settings: HostSettings,
    /** HostContext.keyringConflict: vaults named are refused while the hosts' keyrings disagree. */
    private readonly keyringConflict: () => string | undefined,
  ) {
    this.resolve = agentResolver(client)
    this.read = (id, version) => client.call(AgentKind.ops.get, { id, query: { version } })
  }

  /** The agent a deployment runs, pinned to a concrete version (a string: its latest), and what a session would run. */
  async pin(input: DeploymentAgentParamsT): Promise<{ ref: AgentReference; agent: SessionAgent }> {
    const agent = await snapshotAgent(this.resolve, input).catch(inField('agent'))
    return { ref: { type: 'agent', id: agent.id, version: agent.version }, agent }
  }

  /** What the pinned version runs (its models, for a budget). */
  pinned(ref: AgentReference): Promise<SessionAgent> {
    return snapshotAgent(this.read, ref).catch(inField('agent'))
  }

  /**
   * Each file a resource names exists (each run's session copies them; one deleted since fails that run), and each
   * memory store exists and is not archived (each run's session attaches it; one archived since fails that run with
   * `memory_store_archived_error`, which pauses a schedule).
   */
  async resources(resources: readonly ResourceParamsT[]): Promise<void> {
    for (const [i, r] of resources.entries()) {
      if (isFileParams(r)) await this.client.call(FileKind.ops.get, { id: r.file_id }).catch(inField(`resources[${i}].file_id`))
      if (isMemoryStoreParams(r)) {
        const field = `resources[${i}].memory_store_id`
        const store = await this.client.call(MemoryStoreKind.ops.get, { id: r.memory_store_id }).catch(inField(field))
        if (store.archived_at) inField(field, { every4xx: true })(fail('memory_store_archived', store.id))
      }
    }
  }

  /** The vaults named exist and are not archived, and the keyring is configured (each run's session checks again). */
  vaults(ids: readonly string[]): Promise<void> {
    return checkVaultRefs({ client: this.client, settings: this.settings, keyringConflict: this.keyringConflict }, ids)
  }

  /**
   * The environment exists and is not archived, and, for the agent a run would start, lets it reach its MCP servers
   * (a limited environment without `allow_mcp_servers`: 400, as a session create; one changed since fails the run with
   * `mcp_egress_blocked_error`).
   */
  async environment(id: string, agent: SessionAgent): Promise<void> {
    const env = await this.client.call(EnvironmentKind.ops.get, { id }).catch(inField('environment_id'))
    if (env.archived_at) prefixed('environment_id: ', () => throwArchived(id))
    checkMcpEgress(env, agent)
  }

  /** An agent newly pinned reaches its MCP servers from the environment kept (whether archived is for its runs). */
  async mcpEgress(environmentId: string, agent: SessionAgent): Promise<void> {
    checkMcpEgress(await this.client.call(EnvironmentKind.ops.get, { id: environmentId }).catch(inField('environment_id')), agent)
  }
}

const throwArchived = (id: string): never => {
  throw fail('environment_archived', id)
}
