/** A session's outputs folder published as Files at each turn's end (outputs.ts: the pass; walk.ts, read.ts, state.ts). */
export { type OutputPublisher, SessionOutputs } from './outputs.js'
