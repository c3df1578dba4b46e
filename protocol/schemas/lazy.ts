/**
 * A schema built on first use. Building every arktype schema at import cost a process start ~0.85 s of CPU (node
 * construction and the compiles of each validator); a server or a test touches a few of them. The proxy stands in for
 * the schema wherever it goes (called to validate, composed into other schemas, `.or`, `.array`, …): the first thing
 * done with it builds it, and every later use goes to the built schema.
 */
export function lazy<T extends object>(make: () => T): T {
  let real: T | undefined
  const get = (): T => (real ??= make())
  return new Proxy(function lazySchema() {}, {
    apply: (_t, self, args) => Reflect.apply(get() as (...a: unknown[]) => unknown, self, args),
    get: (_t, key) => {
      const r = get()
      const v = Reflect.get(r, key, r)
      // A method (from the prototype) runs on the schema itself; a callable own property (an arktype node) is itself.
      return typeof v === 'function' && !Object.hasOwn(r, key) ? Function.prototype.bind.call(v, r) : v
    },
    has: (_t, key) => Reflect.has(get(), key),
    getPrototypeOf: () => Reflect.getPrototypeOf(get()),
    ownKeys: () => Reflect.ownKeys(get()),
    getOwnPropertyDescriptor: (_t, key) => {
      const d = Reflect.getOwnPropertyDescriptor(get(), key)
      // A proxy may not report a property non-configurable unless its target has it so.
      if (d) d.configurable = true
      return d
    },
  }) as unknown as T
}
