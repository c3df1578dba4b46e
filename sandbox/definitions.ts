/** Tools of `agent_toolset_20260401` that this module executes. */
export const BUILTIN_TOOL_NAMES = ['bash', 'read', 'write', 'edit', 'glob', 'grep'] as const

export type BuiltinToolName = (typeof BUILTIN_TOOL_NAMES)[number]

export interface ToolDefinition {
  name: string
  description: string
  input_schema: object
}

export function isBuiltinToolName(name: string): name is BuiltinToolName {
  return (BUILTIN_TOOL_NAMES as readonly string[]).includes(name)
}

const DEFINITIONS: Record<BuiltinToolName, ToolDefinition> = {
  bash: {
    name: 'bash',
    description:
      'Run a command in a persistent bash shell. The working directory and exported variables persist between calls; ' +
      'the shell starts in the session working directory. Commands run non-interactively (stdin is /dev/null), ' +
      'so avoid commands that wait for input. A non-zero exit status is reported as an error with its exit code. ' +
      'Commands that exceed the timeout are killed. Use restart: true to get a fresh shell if it is in a bad state.',
    input_schema: {
      type: 'object',
      properties: {
        command: { type: 'string', description: 'The bash command to run. Required unless restart is true.' },
        restart: { type: 'boolean', description: 'Restart the shell (discarding its state) before running command, if any.' },
        timeout_ms: { type: 'integer', minimum: 1, description: 'Timeout for this command in milliseconds.' },
      },
    },
  },
  read: {
    name: 'read',
    description:
      'Read a text file, returned with line numbers (cat -n style). view_range [start, end] selects 1-based inclusive lines; ' +
      'end -1 means to the end of the file. Reading a directory lists its entries (directories end with "/"). ' +
      'Relative paths resolve against the working directory.',
    input_schema: {
      type: 'object',
      properties: {
        file_path: { type: 'string', description: 'Path of the file or directory to read.' },
        view_range: {
          type: 'array',
          items: { type: 'integer' },
          minItems: 2,
          maxItems: 2,
          description: '[start, end] line range, 1-based and inclusive; end -1 reads to the end.',
        },
      },
      required: ['file_path'],
    },
  },
  write: {
    name: 'write',
    description:
      'Write content to a file, creating parent directories as needed and overwriting any existing file. ' +
      'Relative paths resolve against the working directory.',
    input_schema: {
      type: 'object',
      properties: {
        file_path: { type: 'string', description: 'Path of the file to write.' },
        content: { type: 'string', description: 'The complete new content of the file.' },
      },
      required: ['file_path', 'content'],
    },
  },
  edit: {
    name: 'edit',
    description:
      'Replace an exact string in a file. old_string must occur in the file; if it occurs more than once, ' +
      'include more surrounding context to make it unique, or set replace_all to replace every occurrence.',
    input_schema: {
      type: 'object',
      properties: {
        file_path: { type: 'string', description: 'Path of the file to edit.' },
        old_string: { type: 'string', description: 'The exact text to replace.' },
        new_string: { type: 'string', description: 'The replacement text.' },
        replace_all: { type: 'boolean', description: 'Replace every occurrence of old_string (default false).' },
      },
      required: ['file_path', 'old_string', 'new_string'],
    },
  },
  glob: {
    name: 'glob',
    description:
      'Find files by glob pattern (e.g. "**/*.ts", "src/*.{js,json}"). Supports **, *, ?, [...] and {a,b}; ' +
      'wildcards also match dot-files. .git and node_modules are skipped unless the pattern names them. ' +
      'Results are relative to the search directory, newest first.',
    input_schema: {
      type: 'object',
      properties: {
        pattern: { type: 'string', description: 'The glob pattern to match.' },
        path: { type: 'string', description: 'Directory to search in; defaults to the working directory.' },
      },
      required: ['pattern'],
    },
  },
  grep: {
    name: 'grep',
    description:
      'Search file contents with a regular expression (JavaScript syntax), recursively under path. ' +
      'Skips .git, node_modules and binary files. Output lines are "path:line:text", with paths relative to the working directory.',
    input_schema: {
      type: 'object',
      properties: {
        pattern: { type: 'string', description: 'The regular expression to search for.' },
        path: { type: 'string', description: 'File or directory to search; defaults to the working directory.' },
      },
      required: ['pattern'],
    },
  },
}

/**
 * Tool definitions to send to the Messages API for the enabled built-in tools, in the order
 * given. Names this module does not execute (e.g. web tools handled elsewhere) are skipped.
 */
export function builtinToolDefinitions(names: readonly string[]): ToolDefinition[] {
  const seen = new Set<string>()
  const out: ToolDefinition[] = []
  for (const name of names) {
    if (!isBuiltinToolName(name) || seen.has(name)) continue
    seen.add(name)
    // Copy so callers may decorate (e.g. cache_control) without corrupting the shared table.
    out.push(structuredClone(DEFINITIONS[name]))
  }
  return out
}
