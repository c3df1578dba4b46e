import t from 'tap'
import './keepalive.js'
import { startNats, type TestNats } from './nats.js'
import { startTroupe, clientFor, logLines, type TroupeProcess, type StartOptions } from './troupe.js'

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
    // A failure that happens once in a hundred runs is diagnosed from what the server said then, or not at all.
    if (!t.passing()) {
      const said = logLines(troupe).filter((l) => Number(l.level) >= 40 || !('level' in l))
      if (said.length)
        process.stderr.write(
          `troupe's warnings and errors (${said.length}; the last 40):\n${said
            .slice(-40)
            .map((l) => JSON.stringify(l))
            .join('\n')}\n`,
        )
    }
  })
  return { nats, troupe, url: troupe.url, client: clientFor(troupe.url) }
}
