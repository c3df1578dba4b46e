/**
 * Variables copied from the server's environment into agent shells. Everything else is
 * withheld because the server process holds credentials (API keys, NATS creds) that an
 * agent-run command must not be able to read with a plain `env`.
 */
const INHERITED = ['PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'LANG', 'LANGUAGE', 'LC_ALL', 'LC_CTYPE', 'TZ', 'TMPDIR']

/** Settings that keep programs from paging, prompting or colouring output meant for a model. */
const NON_INTERACTIVE: Record<string, string> = {
  TERM: 'dumb',
  NO_COLOR: '1',
  PAGER: 'cat',
  GIT_PAGER: 'cat',
  GIT_TERMINAL_PROMPT: '0',
  DEBIAN_FRONTEND: 'noninteractive',
  PS1: '',
  PS2: '',
}

export function defaultShellEnv(): Record<string, string> {
  const env: Record<string, string> = {}
  for (const key of INHERITED) {
    const v = process.env[key]
    if (v !== undefined) env[key] = v
  }
  env.PATH ??= '/usr/local/bin:/usr/bin:/bin'
  return env
}

export function shellEnv(base: Record<string, string> | undefined): Record<string, string> {
  return { ...(base ?? defaultShellEnv()), ...NON_INTERACTIVE }
}
