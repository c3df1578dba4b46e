import { parseArgs, type ParseArgsConfig } from 'node:util'
import type { NatsConnection } from '@nats-io/transport-node'
import { findNats } from '../lockfile-info.js'
import { connectNats, redact } from '../nats-connect.js'

/** Wrong words on the command line: the message and the usage, exit 2. */
export class UsageError extends Error {}

export interface Connected {
  nc: NatsConnection
  /** The URL as it may be printed (no password). */
  url: string
}

/** What a command gets from the runner. */
export interface Io {
  /** Connects once (NATS_URL, or the lock file of a running `troupe start`); later calls return the same. */
  connect(): Promise<Connected>
  /** One line on stdout. */
  out(line: string): void
  /** One line on stderr, for people: progress and notes, never data. */
  note(line: string): void
  /** Aborted by Ctrl-C (SIGINT) or SIGTERM. */
  signal: AbortSignal
}

export type Command = (args: string[], io: Io) => Promise<void>

type Options = NonNullable<ParseArgsConfig['options']>

/** node:util parseArgs, its complaints turned into usage errors. */
export function parse<O extends Options>(args: string[], options: O) {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true })
  } catch (err) {
    throw new UsageError((err as Error).message)
  }
}

/** Connects where `findNats` says; a failure names where the URL came from when it was not NATS_URL. */
export async function connectForInspect(name: string, env: NodeJS.ProcessEnv = process.env): Promise<Connected> {
  const target = findNats(env)
  try {
    return { nc: await connectNats(target.url, { name }), url: redact(target.url) }
  } catch (err) {
    throw new Error(target.hint ? `${(err as Error).message} (${target.hint})` : (err as Error).message, { cause: err })
  }
}

/** JetStream reads need it; without it every call fails with a timeout that says nothing. */
export function needJetStream({ nc, url }: Connected): void {
  if (!nc.info?.jetstream) throw new Error(`the NATS server at ${url} has JetStream disabled; Troupe keeps its state there (start nats-server with -js)`)
}

/** Resolves when the signal aborts. */
export const aborted = (signal: AbortSignal) =>
  new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })))
