/**
 * The import graph's rules, checked by `npm run deps` (one check of .ci/run) over the service's sources; test/ is
 * not checked, except that nothing in the service may import it. Type-only imports are edges like any other: a
 * circle held shut by `import type` is still a circle to whoever reads the files (docs/ARCHITECTURE.md, "Layout").
 */

const literal = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/**
 * Rules keeping the entries under `root` (folders, or files by their name) in layers: each imports, besides itself,
 * only the entries it lists. Entries not in the table are not held by these rules.
 */
function layers(root, table) {
  const names = Object.keys(table)
  return names.flatMap((name) => {
    const above = names.filter((other) => other !== name && !table[name].includes(other))
    if (above.length === 0) return []
    return [
      {
        name: `layer-${root}${name}`.replace(/[^a-zA-Z0-9]+/g, '-'),
        comment: `${root}${name} imports only ${table[name].map((n) => root + n).join(', ') || 'nothing of ours'} (docs/ARCHITECTURE.md, "Layout")`,
        severity: 'error',
        from: { path: `^${literal(root + name)}(/|$)` },
        to: { path: `^${literal(root)}(${above.map(literal).join('|')})(/|$)` },
      },
    ]
  })
}

/** Rules keeping each folder under `root` closed: from outside the folder, only its index.ts may be imported. */
function onlyViaIndex(root, what) {
  const r = literal(root)
  const comment = `from outside a folder of ${root}, import only its index.ts (${what}'s public surface)`
  return [
    {
      name: `${what}-internals-from-another`,
      comment,
      severity: 'error',
      from: { path: `^${r}([^/]+)/` },
      to: { path: `^${r}[^/]+/`, pathNot: [`^${r}$1/`, `^${r}[^/]+/index\\.ts$`] },
    },
    {
      name: `${what}-internals-from-outside`,
      comment,
      severity: 'error',
      from: { pathNot: [`^${r}[^/]+/`, '^test/'] },
      to: { path: `^${r}[^/]+/`, pathNot: `^${r}[^/]+/index\\.ts$` },
    },
  ]
}

export default {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'no import circle, type-only imports included: a lower file that needs an upper one takes an interface it owns',
      severity: 'error',
      from: { pathNot: '^test/' },
      to: { circular: true },
    },
    {
      name: 'not-to-test',
      comment: 'the service never imports test/',
      severity: 'error',
      from: { pathNot: '^test/' },
      to: { path: '^test/' },
    },
    // The top-level folders, as the Layout table of docs/ARCHITECTURE.md has them.
    ...layers('', {
      protocol: [],
      metrics: [],
      gateway: ['protocol', 'metrics'],
      sandbox: ['protocol', 'metrics'],
      actors: ['protocol', 'sandbox', 'metrics'],
      supervisor: ['protocol', 'actors', 'gateway', 'sandbox', 'metrics'],
      bin: ['supervisor'],
    }),
    // Each actor kind (and the kit) is used through its index.ts.
    ...onlyViaIndex('actors/', 'kind'),
    // The session's rooms (docs/ARCHITECTURE.md, "Sessions"), in one order of layers: each imports only the rooms
    // below it, and from outside a room only its index.ts.
    ...layers('actors/session/', {
      'index.ts': ['handlers', 'actor', 'threads', 'turn', 'admission', 'history', 'log', 'billing'],
      handlers: ['actor', 'threads', 'turn', 'admission', 'history', 'log', 'billing'],
      actor: ['threads', 'turn', 'admission', 'history', 'log', 'billing'],
      threads: ['turn', 'admission', 'history', 'log', 'billing'],
      turn: ['admission', 'history', 'log', 'billing'],
      admission: ['history', 'log', 'billing'],
      history: ['log', 'billing'],
      log: ['billing'],
      billing: [],
    }),
    ...onlyViaIndex('actors/session/', 'session-room'),
    // The session host directory's parts (actors/workdir/: outputs/, skills/, workspace/) through their index.ts.
    ...onlyViaIndex('actors/workdir/', 'workdir-room'),
  ],
  options: {
    // Keep `import type` as edges (they are erased when compiled, and would otherwise not be seen).
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    // Our files only: packages and node's modules are not part of the layering.
    includeOnly: '^(protocol|metrics|gateway|actors|sandbox|supervisor|bin|test)/',
  },
}
