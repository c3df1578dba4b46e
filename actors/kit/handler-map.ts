/**
 * A handler map: one function per key of `M`, each taking that key's value (the model: Temporal's `ActivationHandler`,
 * one method per kind of job). Over a union discriminated on `type` (`ByType`, protocol/session-events.ts) it says what
 * happens to each member, and a member added to the union without an entry is a compile error.
 */
export type HandlerMap<M> = { [K in keyof M]: (value: M[K]) => void }

/**
 * Runs `key`'s handler on `value`. Taking the key apart from the value ties the two to one `K`, which is what lets the
 * compiler check the call without a cast. A key the map lacks at run time (a type stored by a newer version) does
 * nothing.
 */
export function handle<M, K extends keyof M>(map: HandlerMap<M>, key: K, value: M[K]): void {
  map[key]?.(value)
}
