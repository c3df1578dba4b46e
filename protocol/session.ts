import type { SessionStatus } from './events.js'
import type { Agent, AdvisorEntry, Multiagent20261001 } from './schemas/agent.js'
import type { EnvironmentConfig } from './schemas/environment.js'
import type { Budget, SessionUsage } from './cost.js'
import type { SessionResource } from './schemas/resource.js'

/** A roster member as a session captures it: a full definition, without its own roster (WIRE §6 ThreadAgent). */
export type ThreadAgent = Omit<Agent, 'metadata' | 'created_at' | 'updated_at' | 'archived_at' | 'multiagent'>

/** The immutable agent snapshot a session runs (WIRE §6 SessionAgent). */
export interface SessionAgent extends ThreadAgent {
  multiagent: SessionMultiagent | null
}

/** The agent's multiagent with every referenced agent captured whole (WIRE §6 SessionAgent). */
export type SessionMultiagent = { type: 'coordinator'; agents: Array<ThreadAgent | AdvisorEntry> } | Multiagent20261001<ThreadAgent>

/** WIRE §6 OutcomeEvaluation: one per outcome, as it stands. */
export interface OutcomeEvaluation {
  type: 'outcome_evaluation'
  outcome_id: string
  description: string
  /** 0-based: the grader pass under way or last made. */
  iteration: number
  result: 'pending' | 'running' | 'evaluating' | 'satisfied' | 'max_iterations_reached' | 'failed' | 'interrupted'
  explanation: string | null
  completed_at: string | null
}

/** WIRE §6 Session. */
export interface Session {
  id: string
  type: 'session'
  status: SessionStatus
  agent: SessionAgent
  environment_id: string
  title: string | null
  metadata: Record<string, string>
  budget: Budget | null
  resources: SessionResource[]
  vault_ids: string[]
  outcome_evaluations: OutcomeEvaluation[]
  stats: { active_seconds: number; duration_seconds: number }
  usage: SessionUsage
  deployment_id: string | null
  created_at: string
  updated_at: string
  archived_at: string | null
}

/** The environment configuration a session captured at creation (SPEC: later updates do not affect it). */
export type CapturedEnvironment = EnvironmentConfig

/** WIRE §8 SessionThread: the primary thread (`parent_thread_id` null) or a child a coordinator's send started. */
export interface SessionThread {
  id: string
  type: 'session_thread'
  session_id: string
  parent_thread_id: string | null
  agent: ThreadAgent | AdvisorEntry
  status: SessionStatus
  stats: { active_seconds: number; duration_seconds: number } | null
  /** The thread's own: `list_cost` excludes the session's runtime (WIRE §8). */
  usage: SessionUsage | null
  workflow_run_id: string | null
  created_at: string
  updated_at: string
  archived_at: string | null
}
