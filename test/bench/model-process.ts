// The fake Messages API (test/fakes/model-server.ts) in its own process, so that serving hundreds of turns does
// not share an event loop with the benchmark's clients. Default reply: text "ok", at once. Prints its URL.
import { startFakeModelServer } from '../fakes/model-server.js'

const model = await startFakeModelServer()
// Nothing reads what it records: keep a long run from growing without bound.
setInterval(() => void model.requests.splice(0), 1000).unref()
console.log(`fake model on ${model.url}`)
