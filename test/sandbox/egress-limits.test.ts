import { mkdtempSync, rmSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { DescriptorGate, defaultReserve } from '../../sandbox/egress/descriptors.js'
import { AddressJudge, EgressProxy } from '../../sandbox/egress/proxy.js'

/**
 * The egress proxies' bounds on descriptors (real Unix sockets, no sandbox needed): one sandbox's proxy holds at most
 * `connections` at once, and all of a process's proxies together leave the server its reserve; what is past either is
 * answered 503 with the setting named, and closed, and a slot freed is usable again.
 */

const dir = mkdtempSync(path.join(os.tmpdir(), 'troupe-egress-limits-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))
const judge = new AddressJudge({ allowAddresses: [] })

/** Opens `n` connections to `socket`; each settles as held (nothing heard within the wait) or refused (what it heard). */
async function flood(socket: string, n: number): Promise<{ held: Socket[]; refused: string[] }> {
  const conns = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<Socket>((resolve, reject) =>
          connect(socket)
            .once('connect', function (this: Socket) {
              resolve(this)
            })
            .once('error', reject),
        ),
    ),
  )
  const heard = conns.map((c) => {
    let data = ''
    c.on('data', (d) => (data += d))
    c.on('error', () => undefined)
    return () => data
  })
  await new Promise((r) => setTimeout(r, 500))
  const held: Socket[] = []
  const refused: string[] = []
  for (const [i, c] of conns.entries()) {
    const said = heard[i]!()
    if (said) refused.push(said)
    else held.push(c)
  }
  return { held, refused }
}

t.test('a sandbox holds at most its connections; the rest are refused, naming the setting', async (t) => {
  const gate = new DescriptorGate(100_000, 1_024)
  const proxy = await EgressProxy.open(path.join(dir, 'a.sock'), { type: 'unrestricted' }, judge, { connections: 5, gate })
  t.teardown(() => proxy.close())
  const { held, refused } = await flood(path.join(dir, 'a.sock'), 15)
  t.equal(held.length, 5, 'five held')
  t.equal(refused.length, 10, 'ten refused')
  t.match(refused[0], /^HTTP\/1\.1 503 Service Unavailable/)
  t.match(refused[0], /this sandbox already has 5 connections open, its limit \(TROUPE_SANDBOX_CONNECTIONS\)/)
  t.equal(proxy.connections, 5)
  for (const c of held.slice(0, 2)) c.destroy()
  await new Promise((r) => setTimeout(r, 100))
  const again = await flood(path.join(dir, 'a.sock'), 3)
  t.equal(again.held.length, 2, 'closed connections give their places back')
  for (const c of [...held, ...again.held]) c.destroy()
})

t.test("all proxies of a process together leave the server's reserve", async (t) => {
  // 40 descriptors for connections, two each: 20 connections over both proxies, whatever each may hold.
  const gate = new DescriptorGate(1_000_040, 1_000_000, () => 0)
  const a = await EgressProxy.open(path.join(dir, 'b.sock'), { type: 'unrestricted' }, judge, { connections: 15, gate })
  const b = await EgressProxy.open(path.join(dir, 'c.sock'), { type: 'unrestricted' }, judge, { connections: 15, gate })
  t.teardown(async () => {
    await a.close()
    await b.close()
  })
  const first = await flood(path.join(dir, 'b.sock'), 15)
  t.equal(first.held.length, 15)
  const second = await flood(path.join(dir, 'c.sock'), 15)
  t.equal(second.held.length, 5, 'the second proxy gets what is left')
  t.match(second.refused[0], /keeps its last 1000000 of 1000040 file descriptors for itself \(TROUPE_FD_RESERVE\)/)
  for (const c of [...first.held, ...second.held]) c.destroy()
})

t.test('no connection while the process has nearly all its descriptors open, whatever the proxies hold', async (t) => {
  let open = 700
  const gate = new DescriptorGate(1_000, 200, () => open)
  t.equal(gate.take(), null, 'below the limit less the reserve')
  open = 800
  await new Promise((r) => setTimeout(r, 300))
  t.match(gate.take(), /TROUPE_FD_RESERVE/, 'at it: refused')
})

t.test('the default reserve', async (t) => {
  t.equal(defaultReserve(20_000), 5_000, 'a quarter')
  t.equal(defaultReserve(2_048), 1_024, 'at least 1,024')
  t.equal(defaultReserve(1_024), 512, 'or half a small limit')
})
