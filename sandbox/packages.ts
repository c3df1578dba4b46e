import { createHash } from 'node:crypto'
import type { Packages } from '../protocol/schemas/environment.js'
import { shellQuote } from './host/shell.js'

/** An environment's package lists (SPEC environments: apt, cargo, gem, go, npm, pip), names passed as given. */
export type PackageLists = Omit<Packages, 'type'>

export const PACKAGE_MANAGERS = ['apt', 'cargo', 'gem', 'go', 'npm', 'pip'] as const

/** The managers with something to install. */
export function listedManagers(p: PackageLists): Array<(typeof PACKAGE_MANAGERS)[number]> {
  return PACKAGE_MANAGERS.filter((m) => p[m].length > 0)
}

/** What a sandbox remembers it installed: another list (an environment's packages never change for a session) installs anew. */
export function packagesDigest(p: PackageLists): string {
  return createHash('sha256')
    .update(JSON.stringify(PACKAGE_MANAGERS.map((m) => p[m])))
    .digest('hex')
}

/** The outcome of installing a sandbox's packages. */
export type Provisioned = { ok: true } | { ok: false; message: string }

/**
 * The session's own prefix inside an isolated sandbox: the host's /usr is read-only, so every manager installs
 * beneath this writable directory instead, and the sandbox's environment finds things there (layout.ts
 * `insideEnv`). apt cannot install as an unprivileged user: its packages (with what they depend on that the host
 * lacks) are downloaded and unpacked beneath `apt/`, without running their maintainer scripts.
 */
export const PACKAGES_PREFIX = '/opt/packages'

/** How each manager installs into `PACKAGES_PREFIX`, as the agent's uid; names are passed as given (SPEC rule 1). */
const COMMANDS: Record<(typeof PACKAGE_MANAGERS)[number], { binary: string; install: (names: string) => string }> = {
  apt: {
    binary: 'apt-get',
    install: (names) =>
      [
        `A=${PACKAGES_PREFIX}/.apt; mkdir -p "$A/lists/partial" "$A/archives/partial" ${PACKAGES_PREFIX}/apt`,
        `O="-o Debug::NoLocking=1 -o Dir::State::Lists=$A/lists -o Dir::Cache::Archives=$A/archives -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= -o APT::Sandbox::User=$(id -un)"`,
        'apt-get $O -qq update',
        `apt-get $O -qq -y --no-install-recommends --download-only install ${names}`,
        `for deb in "$A"/archives/*.deb; do [ -e "$deb" ] || continue; dpkg-deb -x "$deb" ${PACKAGES_PREFIX}/apt || exit; done`,
      ].join(' && '),
  },
  cargo: { binary: 'cargo', install: (names) => `cargo install --quiet --root ${PACKAGES_PREFIX} ${names}` },
  gem: { binary: 'gem', install: (names) => `gem install --no-document --install-dir ${PACKAGES_PREFIX}/gems --bindir ${PACKAGES_PREFIX}/bin ${names}` },
  go: { binary: 'go', install: (names) => `GOBIN=${PACKAGES_PREFIX}/bin go install ${names}` },
  npm: { binary: 'npm', install: (names) => `npm install --global --prefix ${PACKAGES_PREFIX} --no-audit --no-fund --loglevel=error ${names}` },
  pip: {
    binary: 'python3',
    install: (names) =>
      `{ python3 -m pip --version >/dev/null 2>&1 || { echo "pip: the sandbox image's python3 has no pip module" >&2; exit 127; }; } && python3 -m pip install --quiet --no-input --disable-pip-version-check --target ${PACKAGES_PREFIX}/python ${names}`,
  },
}

/**
 * A bash script installing `p`, manager by manager in a fixed order, stopping at the first failure with a line on
 * stderr naming the manager (exit 127 when its binary is not in the sandbox image, which is the host's /usr).
 */
export function installScript(p: PackageLists): string {
  const lines = ['set -o pipefail']
  for (const m of listedManagers(p)) {
    const { binary, install } = COMMANDS[m]
    const names = p[m].map(shellQuote).join(' ')
    lines.push(
      `command -v ${binary} >/dev/null 2>&1 || { echo "${m}: ${binary} is not in the sandbox image (the host's /usr): install it on the host, or remove the ${m} packages" >&2; exit 127; }`,
      `echo "== ${m}: installing ${p[m].length} package(s)" >&2`,
      `( ${install(names)} ) || { code=$?; echo "${m}: installation failed (exit $code)" >&2; exit $code; }`,
    )
  }
  return lines.join('\n')
}
