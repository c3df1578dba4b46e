// The fake Messages API for the chaos run, in its own process (so the driver's event loop does not pace the model)
// like test/soak/model.ts. The last user text says what the turn does:
//   "bash <tag> <file> …"  one bash tool call appending "<tag> <tool_use id>" to <file>, so runs can be counted, and
//                          to tags.log in the workspace, which must still hold it after the session moves
//   "probe-write <token>"  a bash call leaving <token> in the workspace (a file in a directory, a link to it)
//   "probe-check"          a bash call reading it back through the link
//   "probe-sleep <s>"      a bash call running `sleep <s>`, to be in flight when its sandbox host is killed
//   "check-tags"           a bash call printing the workspace's tags.log
//   "custom <tag> …"       one call of the custom tool `lookup`: the session parks until the driver answers
//   "slow <tag> …"         a reply streamed over ~3 s, for the driver to interrupt
//   "delegate <tag>"       a coordinator's send to its member (threads.ts) of "bash <tag> threads.log"
//   "memwrite <tag> <file>" a bash call writing "<tag>" (echo: with a newline) over <file>, a path beneath a memory
//                          mount (/mnt/memory/<slug>/…): the session's write of a memory (memories.ts)
//   "mcp <tag>"            one call of the MCP server's `echo` with the tag (mcp.ts)
//   "mcp-sleep <tag> <ms>" one call of its `sleep` for <ms>, the tag beside (to be in flight when a host dies)
// A grader's request (an outcome's pass) is answered after 1.5 s: needs_revision, then satisfied once the transcript
// holds a revision. A tool result gets a closing text; anything else "ok".
import { randomBytes } from 'node:crypto'
import { startFakeModelServer, type ScriptedReply } from '../fakes/model-server.js'

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
/** The tool use id is chosen here, not by the fake, so the bash command can write it beside the tag. */
const toolUseId = () => `toolu_01${[...randomBytes(22)].map((b) => ALNUM[b % ALNUM.length]).join('')}`

function reply(messages: any[]): ScriptedReply | undefined {
  const last = messages.at(-1)
  const blocks: any[] = Array.isArray(last?.content) ? last.content : [{ type: 'text', text: String(last?.content ?? '') }]
  // Messages swept together (after an interrupt) arrive as one user turn: the newest text is the instruction. A
  // message to a session left parked on a tool comes with that tool's abandoned result: the text still decides.
  const text: string = blocks.filter((b) => b.type === 'text').at(-1)?.text ?? ''
  const [verb, tag, file] = text.split(' ')
  if (!text && blocks.some((b) => b.type === 'tool_result')) return { steps: [{ type: 'text', text: 'ran it' }] }
  if (verb === 'bash' && tag && file) {
    const id = toolUseId()
    return { steps: [{ type: 'tool_use', id, name: 'bash', input: { command: `echo "${tag} ${id}" >> ${file} && echo "${tag} ${id}" >> tags.log` } }] }
  }
  const bash = (command: string): ScriptedReply => ({ steps: [{ type: 'tool_use', name: 'bash', input: { command } }] })
  if (verb === 'probe-write' && tag)
    return bash(`mkdir -p probe && echo ${tag} > probe/token.txt && chmod 640 probe/token.txt && ln -sfn probe/token.txt probe-link && echo wrote`)
  if (verb === 'probe-check') return bash('cat probe-link && stat -c %a probe/token.txt')
  if (verb === 'probe-sleep' && tag) return bash(`sleep ${tag}`)
  if (verb === 'check-tags') return bash('cat tags.log')
  if (verb === 'memwrite' && tag && file?.startsWith('/mnt/memory/')) return bash(`mkdir -p "$(dirname '${file}')" && echo ${tag} > '${file}' && echo wrote`)
  if (verb === 'mcp' && tag) return { steps: [{ type: 'tool_use', name: 'echo', input: { text: tag } }] }
  if (verb === 'mcp-sleep' && tag) return { steps: [{ type: 'tool_use', name: 'sleep', input: { ms: Number(file) || 1000, tag } }] }
  if (verb === 'custom' && tag) return { steps: [{ type: 'tool_use', name: 'lookup', input: { q: tag } }] }
  if (verb === 'delegate' && tag) {
    return { steps: [{ type: 'tool_use', name: 'send_to_agent', input: { agent: 'chaos member', message: `bash ${tag} threads.log` } }] }
  }
  if (verb === 'slow' && tag) return { steps: [{ type: 'text', text: `a long answer about ${tag} `.repeat(30), chunks: 30 }], chunkDelayMs: 100 }
  return undefined
}

const model = await startFakeModelServer()
/** An outcome's grader pass: slow enough to be cut by a fault now and then. */
function grader(messages: any[]): ScriptedReply {
  const revised = JSON.stringify(messages).includes('needs revision')
  const verdict = revised ? { result: 'satisfied', explanation: 'revised' } : { result: 'needs_revision', explanation: 'revise it once' }
  return { delayMs: 1500, steps: [{ type: 'text', text: JSON.stringify(verdict) }] }
}

model.setHandler((req) => (/^You grade the work/.test(req.body?.system ?? '') ? grader(req.body.messages ?? []) : reply(req.body?.messages ?? [])))
// Requests are kept for tests; a long run needs none of them.
setInterval(() => void model.requests.splice(0), 1000).unref()
console.log(`fake model on ${model.url}`)
