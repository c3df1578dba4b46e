import t from 'tap'
import './keepalive.js'
import { startNats, type TestNats } from './nats.js'
import { startTroupe, clientFor, type TroupeProcess, type StartOptions } from './troupe.js'

export interface Stack {
  nats: TestNats
  troupe: TroupeProcess
  url: string
  client: ReturnType<typeof clientFor>
}

/** One nats-server and one `troupe serve` for this test file, torn down when the file ends. */
export async function stack(opts: Omit<StartOptions, 'natsUrl'> = {}): Promise<Stack> {
  const nats = await startNats()
  const troupe = await startTroupe({ ...opts, natsUrl: nats.url })
  // tap runs the root teardown as the process exits, where awaiting is not possible: kill synchronously.
  t.teardown(() => {
    troupe.killNow()
    nats.stopNow()
  })
  return { nats, troupe, url: troupe.url, client: clientFor(troupe.url) }
}
