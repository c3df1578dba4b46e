import { isApiError } from '../../protocol/errors/api-error.js'
import type { FileBytes } from '../../protocol/files.js'
import { AgentKind } from '../../protocol/ops/agent.js'
import { EnvironmentKind } from '../../protocol/ops/environment.js'
import { MemoryStoreKind } from '../../protocol/ops/memory.js'
import { SessionKind } from '../../protocol/ops/session.js'
import type { Dream } from '../../protocol/schemas/dream.js'
import type { MemoryStore } from '../../protocol/schemas/memory.js'
import type { ActorClient } from '../kit/index.js'
import { rethrow } from './calls.js'
import { dreamKickoff, dreamSystem } from './prompt.js'
import { type DreamState, keyOf, sessionOf } from './state.js'
import { settled } from './settle.js'
import { transcriptFiles, transcriptPath, writeTranscripts } from './transcripts.js'

export interface StartDeps {
  client: ActorClient
  files: FileBytes
}

/** The most resources a session takes (SessionCreate's bound): the stores, then the transcripts. */
const MAX_RESOURCES = 100

/**
 * The environment every dream's session runs in: made by the first dream (its id from a fixed Idempotency-Key, so every
 * host names the same one), default configuration. It is an ordinary environment: archiving it fails later dreams.
 */
const DREAM_ENV_KEY = 'troupe:dreams:environment'
const DREAM_ENV = { name: 'Dreams', description: 'Where dreams run their sessions (made by Troupe for the first dream)', metadata: { troupe: 'dreams' } }

/** The memory store the dream reads, if it reads one. */
export const inputStore = (d: Dream): string | undefined => d.inputs.flatMap((i) => (i.type === 'memory_store' ? [i.memory_store_id] : []))[0]
/** The sessions the dream reads (sorted, as the dream shows them). */
export const inputSessions = (d: Dream): string[] => d.inputs.flatMap((i) => (i.type === 'sessions' ? i.session_ids : []))

/** The name of a new output store: the input's with " (dream)", or the dream's own. */
const outputName = (d: Dream, src: MemoryStore | undefined) => (src ? `${src.name.slice(0, 240)} (dream)` : `Dream ${d.id}`)

/** The dream's stores as its session's resources: the input read-only and the output read-write (one store, updated in place). */
function storeResources(d: Dream) {
  const out = d.outputs[0]!.memory_store_id
  const input = inputStore(d)
  if (d.output_behavior.type === 'update_existing') {
    return [
      {
        type: 'memory_store' as const,
        memory_store_id: out,
        access: 'read_write' as const,
        instructions: 'The memory store this dream reorganises in place: read it, and write the result into it.',
      },
    ]
  }
  return [
    ...(input
      ? [
          {
            type: 'memory_store' as const,
            memory_store_id: input,
            access: 'read_only' as const,
            instructions: 'The memory store as it was, for reading: the dream does not change it.',
          },
        ]
      : []),
    {
      type: 'memory_store' as const,
      memory_store_id: out,
      access: 'read_write' as const,
      instructions: input
        ? 'Where the dream writes its result: it starts as a copy of the store it reads.'
        : 'Where the dream writes its result (it starts empty).',
    },
  ]
}

/** Copies every memory of `from` into `to` (a memory already at its path there, from an attempt before a crash, stays). */
async function copyMemories(client: ActorClient, from: string, to: string, rid: string): Promise<void> {
  let page: string | undefined
  do {
    const got = await client.call(MemoryStoreKind.ops['memories.list'], {
      id: from,
      rid,
      query: { view: 'full', limit: 20, ...(page ? { page } : {}) } as never,
    })
    for (const m of got.data) {
      if (m.type !== 'memory') continue
      await client
        .call(MemoryStoreKind.ops['memories.create'], { id: to, rid, body: { path: m.path, content: m.content ?? '' }, query: {} as never })
        .catch((err: unknown) => {
          if (isApiError(err) && err.status === 409) return
          throw err
        })
    }
    page = got.next_page ?? undefined
  } while (page)
}

/** The output store ready (create_new: made, holding a copy of the input's memories): the dream is running from here. */
async function output(deps: StartDeps, s: DreamState, rid: string): Promise<DreamState> {
  const d = s.dream!
  let out: string
  if (d.output_behavior.type === 'update_existing') out = d.output_behavior.memory_store_id
  else {
    const input = inputStore(d)
    const src = input ? await deps.client.call(MemoryStoreKind.ops.get, { id: input, rid }) : undefined
    const made = await deps.client.call(MemoryStoreKind.ops.create, {
      key: keyOf(d.id),
      rid,
      body: { name: outputName(d, src), description: `Written by dream ${d.id}${src ? ` from memory store ${src.id}` : ''}`, metadata: { dream_id: d.id } },
    })
    out = made.id
    if (input) await copyMemories(deps.client, input, out, rid)
  }
  return { ...s, started: { output: true }, dream: { ...d, status: 'running', outputs: [{ type: 'memory_store', memory_store_id: out }] } }
}

/** The dream's session: its agent (the dream's model and prompt), the shared environment, the stores and transcripts. */
async function launch(deps: StartDeps, s: DreamState, rid: string): Promise<DreamState> {
  const d = s.dream!
  const { client } = deps
  const env = await client.call(EnvironmentKind.ops.create, { key: DREAM_ENV_KEY, rid, body: DREAM_ENV })
  const agent = await client.call(AgentKind.ops.create, {
    key: keyOf(d.id),
    rid,
    body: {
      name: `Dream ${d.id}`,
      description: `The agent of dream ${d.id} (archived once its session is made)`,
      model: d.model.id,
      system: dreamSystem(d),
      tools: [{ type: 'agent_toolset_20260401' }],
      metadata: { dream_id: d.id },
    } as never,
  })
  const stores = storeResources(d)
  const files = transcriptFiles(inputSessions(d), MAX_RESOURCES - stores.length)
  const ids = s.started!.transcripts!
  const resources = [...stores, ...files.map((f, i) => ({ type: 'file' as const, file_id: ids[i]!, mount_path: transcriptPath(f) }))]
  const text = dreamKickoff(d, files.map(transcriptPath))
  // The agent is the dream's alone: archived once its session is made (the session keeps its snapshot), or refused.
  const archive = () => client.call(AgentKind.ops.archive, { id: agent.id, rid }).catch(() => undefined)
  const session = await client
    .call(SessionKind.ops.create, {
      id: sessionOf(d.id),
      key: keyOf(d.id),
      rid,
      body: {
        agent: agent.id,
        environment_id: env.id,
        title: `Dream ${d.id}`,
        metadata: { dream_id: d.id },
        resources,
        initial_events: [{ type: 'user.message', content: [{ type: 'text', text }] }],
      } as never,
    })
    .catch(async (err: unknown) => {
      if (isApiError(err) && err.status < 500) await archive()
      throw err
    })
  await archive()
  return { ...s, dream: { ...d, session_id: session.id } }
}

/**
 * One part of a dream's start, each stored before the next (a crash repeats at most the part it cut short, and each part
 * finds what an earlier attempt made, by ids and Idempotency-Keys from the dream's id): the output store, the
 * transcripts, the session. A refusal (an input gone or archived since the create, the model refused) fails the dream.
 */
export async function startStep(deps: StartDeps, s: DreamState, rid: string): Promise<DreamState> {
  const d = s.dream!
  try {
    if (!s.started?.output) return await output(deps, s, rid)
    if (!s.started.transcripts) {
      const files = transcriptFiles(inputSessions(d), MAX_RESOURCES - storeResources(d).length)
      return { ...s, started: { ...s.started, transcripts: await writeTranscripts(deps, d.id, files, rid) } }
    }
    return await launch(deps, s, rid)
  } catch (err) {
    if (isApiError(err) && err.status < 500) return settled(s, 'failed', { type: 'invalid_input', message: err.message })
    return rethrow(err)
  }
}
