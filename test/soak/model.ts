// The fake Messages API for the soak run, in its own process: a message that says "bash" gets one bash tool call
// (which appends a line to a file, so runs can be counted), its result gets a closing text; anything else "ok".
import { startFakeModelServer } from '../fakes/model-server.js'

const model = await startFakeModelServer()
model.setHandler((req) => {
  const last = req.body?.messages?.at(-1)
  const blocks = Array.isArray(last?.content) ? last.content : [{ type: 'text', text: String(last?.content ?? '') }]
  if (blocks.some((b: any) => b.type === 'tool_result')) return { steps: [{ type: 'text', text: 'ran it' }] }
  const text = blocks
    .filter((b: any) => b.type === 'text')
    .map((b: any) => b.text)
    .join(' ')
  const tag = /bash (\S+)/.exec(text)?.[1]
  if (tag) return { steps: [{ type: 'tool_use', name: 'bash', input: { command: `echo ${tag} >> ../runs.log` } }] }
  return undefined
})
setInterval(() => void model.requests.splice(0), 1000).unref()
console.log(`fake model on ${model.url}`)
