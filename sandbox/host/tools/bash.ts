import { asFields, InputError, optionalBoolean, optionalPositiveInt, optionalString } from '../../input.js'
import { capOutput } from '../../output-cap.js'
import { textResult, type ToolResult } from '../../types.js'
import type { ToolContext } from '../context.js'
import type { PersistentShell, ShellRunResult } from '../shell.js'

export interface BashContext extends ToolContext {
  shell: PersistentShell
  defaultTimeoutMs: number
}

export async function bashTool(input: unknown, ctx: BashContext): Promise<ToolResult> {
  const o = asFields(input)
  const command = optionalString(o, 'command')
  const restart = optionalBoolean(o, 'restart') ?? false
  const timeoutMs = optionalPositiveInt(o, 'timeout_ms') ?? ctx.defaultTimeoutMs
  const hasCommand = command !== undefined && command.trim() !== ''
  if (!hasCommand && !restart) throw new InputError('"command" is required unless "restart" is true')

  if (restart) {
    await ctx.shell.restart()
    if (!hasCommand) return textResult('The shell was restarted.')
  }
  const r = await ctx.shell.run(command ?? '', timeoutMs, ctx.signal)
  return format(r, timeoutMs, ctx.maxOutputChars)
}

function format(r: ShellRunResult, timeoutMs: number, max: number): ToolResult {
  const parts: string[] = []
  if (r.output !== '') parts.push(capOutput(r.output, max, r.output.length + r.droppedChars))
  let isError = false
  switch (r.ending) {
    case 'completed':
      if (r.exitCode !== 0) {
        parts.push(`[exit code ${r.exitCode}]`)
        isError = true
      }
      break
    case 'timeout':
      parts.push(`[command timed out after ${timeoutMs} ms and was killed]`)
      isError = true
      break
    case 'aborted':
      parts.push('[command interrupted: the run was aborted; anything still running was killed]')
      isError = true
      break
    case 'shell-exited': {
      const how = r.shellExit?.signal ? `was killed by signal ${r.shellExit.signal}` : `exited with code ${r.shellExit?.code}`
      parts.push(`[the shell ${how}; the next command starts a new shell in the working directory]`)
      isError = r.shellExit?.code !== 0 || r.shellExit.signal !== undefined
      break
    }
  }
  if (r.shellReset) {
    parts.push('[the shell had to be killed; the next command starts a new shell, so the working directory and variables were reset]')
  }
  return textResult(parts.length === 0 ? '(no output)' : parts.join('\n'), isError)
}
