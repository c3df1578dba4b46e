import type { SharedActorKind } from '../kit/types.js'

// Placeholder until the agent vertical lands.
export const agentKind: SharedActorKind = {
  kind: 'agent',
  placement: 'shared',
  async start() {
    return { ops: {}, close: async () => undefined }
  },
}
