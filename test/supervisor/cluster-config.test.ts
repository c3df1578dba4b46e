import { execFile } from 'node:child_process'
import path from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { connect } from '@nats-io/transport-node'
import { Kvm } from '@nats-io/kv'
import '../helpers/keepalive.js'
import { decode } from '../../protocol/codec.js'
import { Buckets, PARTITIONS } from '../../protocol/subjects.js'
import { keyringConflict, ownersFor } from '../../supervisor/cluster-config.js'
import { joinHint } from '../../supervisor/join-hint.js'
import { startFakeModelServer } from '../fakes/model-server.js'
import { startNats } from '../helpers/nats.js'
import { hostOf } from '../helpers/placement.js'
import { clientFor, logLines, startTroupe, type TroupeProcess } from '../helpers/troupe.js'
import { until } from '../helpers/wait.js'
import { keyringFile, newKey } from '../vaults/_helpers.js'

// Hosts of one cluster tell each other what they can do in their heartbeat: a host without a model endpoint owns no
// session while one with it is live, and hosts whose keyrings do not work together refuse vault writes and webhooks,
// naming why. The banner's `scale` line starts a second host with every shared setting.

const ring = (keys: Record<string, string>, sealing: string) => ({ can: { model: true, sandbox: 'local', keyring: { keys, sealing } } })

t.test('keyrings: the same key ids and keys agree; a key id with another key, or a sealing key another lacks, do not', async (t) => {
  t.equal(
    keyringConflict([
      ['a', ring({ k1: 'aa' }, 'k1')],
      ['b', ring({ k1: 'aa' }, 'k1')],
    ]),
    undefined,
  )
  t.equal(
    keyringConflict([
      ['a', ring({ k1: 'aa' }, 'k1')],
      ['b', { can: { model: true, sandbox: 'local' } }],
    ]),
    undefined,
    'a host without one is no conflict',
  )
  t.equal(
    keyringConflict([
      ['a', ring({ k1: 'aa' }, 'k1')],
      ['b', ring({ k1: 'bb' }, 'k1')],
    ]),
    'key k1 differs between hosts a (aa) and b (bb)',
  )
  t.equal(
    keyringConflict([
      ['a', ring({ k1: 'aa', k2: 'cc' }, 'k2')],
      ['b', ring({ k1: 'aa' }, 'k1')],
    ]),
    'host a seals new secrets with key k2, which host b lacks',
  )
})

t.test('owners of a kind: the hosts that can, or all when none can', async (t) => {
  const can = (model: boolean) => ({ model, sandbox: 'local' })
  const abilities = (h: string) => (h === 'old' ? undefined : can(h === 'with'))
  t.same(ownersFor('session', ['with', 'without'], abilities), ['with'])
  t.same(ownersFor('session', ['without'], abilities), ['without'], 'a kind is always served somewhere')
  t.same(ownersFor('session', ['old', 'without'], abilities), ['old'], "an earlier version's beat says nothing: it can")
  t.same(ownersFor('agent', ['with', 'without'], abilities), ['with', 'without'], 'kinds that need nothing go anywhere')
})

t.test('the scale line carries the shared settings, secrets by reference, files as absolute paths', async (t) => {
  const nats = { joinUrl: 'nats://127.0.0.1:4000' } as never
  const cfg = { natsHost: '127.0.0.1', strict: true } as never
  const line = joinHint(
    cfg,
    nats,
    {
      TROUPE_MODEL_BASE_URL: 'http://127.0.0.1:9000',
      ANTHROPIC_API_KEY: 'sk-secret',
      TROUPE_VAULT_KEYRING_FILE: 'keys/ring.json',
      TROUPE_DATA_DIR: './mine',
      TROUPE_SANDBOX: 'local',
      PATH: '/usr/bin',
    },
    '/srv/app',
  )
  t.equal(
    line,
    'NATS_URL=nats://127.0.0.1:4000 PORT=0 TROUPE_DATA_DIR=./.troupe-2 ANTHROPIC_API_KEY="$ANTHROPIC_API_KEY" TROUPE_MODEL_BASE_URL=http://127.0.0.1:9000 ' +
      'TROUPE_SANDBOX=local TROUPE_VAULT_KEYRING_FILE=/srv/app/keys/ring.json TROUPE_STRICT=1 npx troupe serve ' +
      '(port kept across restarts while free; TROUPE_NATS_PORT fixes it; this machine only, TROUPE_NATS_HOST opens it)',
  )
  t.notMatch(line, 'sk-secret', 'never a secret value')
})

t.test('two hosts configured differently on one cluster', async (t) => {
  const model = await startFakeModelServer()
  const nats = await startNats()
  const procs: TroupeProcess[] = []
  t.teardown(() => {
    for (const p of procs) p.killNow()
    nats.stopNow()
    void model.close()
  })
  const nc = await connect({ servers: nats.url })
  t.teardown(() => void nc.close())
  const k1 = newKey()
  const withModel = await startTroupe({
    natsUrl: nats.url,
    env: { TROUPE_MODEL_BASE_URL: model.url, ANTHROPIC_API_KEY: 'k', TROUPE_VAULT_KEYRING_FILE: keyringFile([{ id: 'k1', key: k1 }]) },
  })
  // Started as the banner's old scale line did: no model, and a keyring of its own.
  const without = await startTroupe({ natsUrl: nats.url, env: { TROUPE_VAULT_KEYRING_FILE: keyringFile([{ id: 'k1', key: newKey() }]) } })
  procs.push(withModel, without)
  await until('its start-up block', () => /owns/.test(without.stdout()))
  t.match(without.stdout(), /owns\s+partitions of every kind, but none while a host that can is live of session: no model endpoint/, 'its banner says so')
  // The log is written in batches: the line may follow the banner by a moment.
  await until('its log says so', () => logLines(without).some((l) => String(l.msg).startsWith('this host owns no session partition')))
  t.pass('and its log')

  const placement = await new Kvm(nc).open(Buckets.placement)
  const holders = async (kind: string) => {
    const out = new Map<string, number>()
    for (let p = 0; p < PARTITIONS; p++) {
      const e = await placement.get(`${kind}.p${String(p).padStart(2, '0')}`)
      const h = e?.operation === 'PUT' ? decode<{ host: string }>(e.value).host : 'none'
      out.set(h, (out.get(h) ?? 0) + 1)
    }
    return out
  }
  await until('every session partition on the host with a model, agents on both', async () => {
    const s = await holders('session')
    const a = await holders('agent')
    return s.get(hostOf(withModel)!) === PARTITIONS && (a.get(hostOf(without)!) ?? 0) > 0
  })
  t.pass('sessions placed on the host that can run them; other kinds on both')

  // Every session made through the host without a model runs its turn.
  const client = clientFor(without.url, { maxRetries: 4 })
  const agent = await client.beta.agents.create({ name: 'placed', model: 'claude-sonnet-4-5' })
  const environment = await client.beta.environments.create({ name: 'placed' })
  const ids: string[] = []
  for (let i = 0; i < 6; i++) {
    const s = await client.beta.sessions.create({ agent: agent.id, environment_id: environment.id } as never)
    await client.beta.sessions.events.send(s.id, { events: [{ type: 'user.message', content: [{ type: 'text', text: 'hi' }] }] } as never)
    ids.push(s.id)
  }
  for (const id of ids) {
    await until(`session ${id} idle after its turn`, async () => {
      const types: string[] = []
      for await (const e of client.beta.sessions.events.list(id)) types.push(e.type)
      return types.includes('agent.message') && types.at(-1) === 'session.status_idle'
    })
    const types: string[] = []
    for await (const e of client.beta.sessions.events.list(id)) types.push(e.type)
    t.notOk(types.includes('session.error'), `${id}: no error`)
  }

  // The keyrings hold key k1 with different keys: vault writes are refused on either host, naming why.
  for (const host of [withModel, without]) {
    const err = await clientFor(host.url)
      .beta.vaults.create({ display_name: 'v' })
      .catch((e: { status: number; error: { error: { message: string } } }) => e)
    t.equal((err as { status: number }).status, 500, 'refused')
    t.match((err as any).error.error.message, /key k1 differs between hosts host_\w+ \(\w+\) and host_\w+ \(\w+\)/, 'naming the mismatch')
  }
  const status = await promisify(execFile)(process.execPath, [path.resolve('bin/troupe.mjs'), 'status'], { env: { ...process.env, NATS_URL: nats.url } })
  t.match(status.stdout, /KEYRINGS DISAGREE: key k1 differs/, 'troupe status says so')
  t.match(status.stdout, /model none .*owns none of session: no model endpoint/, 'and what each host can do')

  // Restarted with the same keyring as the other, it agrees: vaults work again.
  await without.kill()
  const agreeing = await startTroupe({ natsUrl: nats.url, env: { TROUPE_VAULT_KEYRING_FILE: keyringFile([{ id: 'k1', key: k1 }]) } })
  procs.push(agreeing)
  await until('a vault write goes through', () =>
    clientFor(agreeing.url)
      .beta.vaults.create({ display_name: 'v' })
      .then(
        () => true,
        () => false,
      ),
  )
  t.pass('vaults served once the keyrings agree')
})
