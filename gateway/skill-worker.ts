import { setPriority } from 'node:os'
import { move, transferableSymbol, valueSymbol, workerData } from 'piscina'
import { type BundleInput, type BundleResult, validateBundle } from './skill-bundle.js'

// Niceness is per thread on Linux: validating bundles yields the cores to the gateway's event loop whenever both want
// them. Elsewhere the call may refuse or apply to the whole process; there the worker runs at normal priority.
if (process.platform === 'linux' && typeof workerData?.nice === 'number' && workerData.nice > 0) {
  try {
    setPriority(workerData.nice)
  } catch {}
}

/** The skill pool's task: validate a bundle and write its canonical zip, moved (not copied) back to the caller. */
export default async function skillTask(input: BundleInput): Promise<BundleResult> {
  const result = await validateBundle(input)
  if (!result.ok) return result
  // jszip's output may be a view of a larger buffer; only a whole buffer can be moved.
  const zip = result.zip.byteOffset === 0 && result.zip.byteLength === result.zip.buffer.byteLength ? result.zip : new Uint8Array(result.zip)
  const value: BundleResult = { ...result, zip }
  // piscina moves only what the returned value itself names as transferable: the result object names its zip's buffer.
  return move({ [transferableSymbol]: zip.buffer, [valueSymbol]: value } as never) as unknown as BundleResult
}
