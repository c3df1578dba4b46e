// The fake Messages API (test/fakes/model-server.ts) in its own process, so that serving hundreds of turns does
// not share an event loop with the benchmark's clients. Default reply: text "ok", at once. Prints its URL.
// BENCH_MODEL_SCRIPT=threads (threads.ts): every reply after BENCH_MODEL_DELAY_MS (default 200), by the agent's system
// prompt: LEAD sends three tasks to its member at once, then answers; ADVISED asks its advisor, then answers; the
// member, SOLO, the advisor and the grader answer (the grader: satisfied).
// BENCH_MODEL_SCRIPT=commands (memory.ts): a user message `run: <command>` is answered with one `bash` tool use of that
// command; its result, with the text "done".
// BENCH_MODEL_SCRIPT=mcp (mcp.ts): a user message `mcp: <text>` is answered with one `echo` MCP tool use; its result, "done".
import { startFakeModelServer, type ScriptedReply } from '../fakes/model-server.js'

const model = await startFakeModelServer()
if (process.env.BENCH_MODEL_SCRIPT === 'threads') {
  const delayMs = Number(process.env.BENCH_MODEL_DELAY_MS ?? 200)
  const answered = (body: any) => {
    const last = body.messages.at(-1)
    return Array.isArray(last?.content) && last.content.some((c: any) => c.type === 'tool_result')
  }
  model.setHandler((req): ScriptedReply => {
    const system: string = req.body?.system ?? ''
    const text = (t: string): ScriptedReply => ({ delayMs, steps: [{ type: 'text', text: t }] })
    if (system === 'LEAD' && !answered(req.body)) {
      const send = (message: string) => ({ type: 'tool_use' as const, name: 'send_to_agent', input: { agent: 'member', message } })
      return { delayMs, steps: [send('one'), send('two'), send('three')] }
    }
    if (system === 'ADVISED' && !answered(req.body)) return { delayMs, steps: [{ type: 'tool_use', name: 'advisor', input: {} }] }
    if (system.startsWith('You grade the work')) return text('{"result":"satisfied","explanation":"fine"}')
    return text('done')
  })
}
if (process.env.BENCH_MODEL_SCRIPT === 'commands') {
  model.setHandler((req): ScriptedReply => {
    const last = req.body?.messages?.at(-1)
    const blocks = Array.isArray(last?.content) ? last.content : [{ type: 'text', text: String(last?.content ?? '') }]
    const command = /^run: ([\s\S]*)$/.exec(blocks.find((c: any) => c.type === 'text')?.text ?? '')?.[1]
    if (command && !blocks.some((c: any) => c.type === 'tool_result')) return { steps: [{ type: 'tool_use', name: 'bash', input: { command } }] }
    return { steps: [{ type: 'text', text: 'done' }] }
  })
}
if (process.env.BENCH_MODEL_SCRIPT === 'mcp') {
  // mcp.ts: a user message `mcp: <text>` is answered with one `echo` tool use of the agent's MCP server; its result, "done".
  model.setHandler((req): ScriptedReply => {
    const last = req.body?.messages?.at(-1)
    const blocks = Array.isArray(last?.content) ? last.content : []
    const text = /^mcp: ([\s\S]*)$/.exec(blocks.find((c: any) => c.type === 'text')?.text ?? '')?.[1]
    if (text !== undefined && !blocks.some((c: any) => c.type === 'tool_result')) return { steps: [{ type: 'tool_use', name: 'echo', input: { text } }] }
    return { steps: [{ type: 'text', text: 'done' }] }
  })
}
// Nothing reads what it records: keep a long run from growing without bound.
setInterval(() => void model.requests.splice(0), 1000).unref()
console.log(`fake model on ${model.url}`)
