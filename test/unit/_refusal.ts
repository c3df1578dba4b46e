import { ApiError } from '../../protocol/errors/api-error.js'

/** The ApiError `fn` throws, or undefined when it throws nothing; any other throw is rethrown. */
export function refusal(fn: () => unknown): ApiError | undefined {
  try {
    fn()
  } catch (e) {
    if (e instanceof ApiError) return e
    throw e
  }
  return undefined
}
