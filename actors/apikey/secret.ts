import type { KV } from '@nats-io/kv'
import { loadClusterSecret, type StartupLog } from '../kit/index.js'
import { SECRET_KEY } from './records.js'

/**
 * The cluster's HMAC key of API keys, the same on every host and in the CLI: made once, at random, by whoever first
 * needs it, and stored beside the keys' records; everyone else reads it. Without it a stolen bucket's hashes cannot be
 * tried against guesses offline; whoever reads NATS reads it too (NATS access is the cluster's own trust).
 */
export const loadKeySecret = (kv: KV, log?: StartupLog): Promise<Uint8Array> => loadClusterSecret(kv, SECRET_KEY, 'API keys secret', log)
