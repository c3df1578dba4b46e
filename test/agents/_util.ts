/** The error a promise rejects with (the official client's APIError carries status, errorCode, …). */
export async function failure(p: Promise<unknown>): Promise<any> {
  try {
    await p
  } catch (e) {
    return e
  }
  throw new Error('expected the call to fail')
}

/** Roster entries of a coordinator agent as returned. */
export const rosterOf = (a: { multiagent: unknown }): any[] | undefined => (a.multiagent as { agents?: any[] } | null)?.agents
