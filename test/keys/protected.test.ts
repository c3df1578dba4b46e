import t from 'tap'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import '../helpers/keepalive.js'
import { startNats } from '../helpers/nats.js'
import { raw, settledLogLines } from '../helpers/troupe.js'
import { scratch } from '../helpers/scratch.js'
import { until } from '../helpers/wait.js'

// Protected mode (issue 45 point 3): off loopback, no start without a key unless TROUPE_AUTH=off, which warns.

const nats = await startNats()
t.teardown(() => nats.stopNow())
const files = scratch('troupe-protected-')
const local = (url: string) => url.replace('0.0.0.0', '127.0.0.1')
/** The start-up block, once printed whole (it follows the `listening on` line). */
const block = async (p: { stdout(): string }) => {
  await until('the start-up block', () => /^ {2}version /m.test(p.stdout()), 10_000)
  return p.stdout()
}

t.test('HOST=0.0.0.0 with no key refuses to start, naming TROUPE_AUTH', async (t) => {
  const err = await files.start({ natsUrl: nats.url, env: { HOST: '0.0.0.0' } }).catch((e: Error) => e)
  t.ok(err instanceof Error, 'it exits')
  t.match((err as Error).message, /troupe exited with 1/)
  t.match((err as Error).message, /HOST=0\.0\.0\.0 is not a loopback address and no API key exists \(protected mode\)/)
  t.match((err as Error).message, /TROUPE_AUTH=off/)
  t.match((err as Error).message, /troupe keys create/)
})

t.test('TROUPE_AUTH=off starts off loopback and warns, in the banner and the log', async (t) => {
  const p = await files.start({ natsUrl: nats.url, env: { HOST: '0.0.0.0', TROUPE_AUTH: 'off' } })
  t.match(await block(p), /^ {2}auth +off \(TROUPE_AUTH=off\): WARNING: no API key is checked/m)
  const lines = await settledLogLines(p)
  t.ok(
    lines.some((l) => l.level === 40 && /TROUPE_AUTH=off/.test(String(l.msg))),
    'a warning in the log',
  )
  t.equal((await raw(local(p.url), 'GET', '/v1/agents')).status, 200, 'open, as asked')
  await p.stop()
})

t.test('TROUPE_AUTH with another value stops start-up, naming it', async (t) => {
  const err = await files.start({ natsUrl: nats.url, env: { TROUPE_AUTH: 'maybe' } }).catch((e: Error) => e)
  t.match((err as Error).message, /TROUPE_AUTH must be auto, keys or off \(was "maybe"\)/)
})

t.test('TROUPE_ADMIN_KEY_FILE: the first admin key, and keys are on off loopback', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'troupe-admin-key-'))
  const key = 'admin-key-from-a-file-0123456789abcdef'
  writeFileSync(path.join(dir, 'admin.key'), `${key}\n`, { mode: 0o600 })
  const p = await files.start({ natsUrl: nats.url, env: { HOST: '0.0.0.0', TROUPE_ADMIN_KEY_FILE: path.join(dir, 'admin.key') } })
  t.match(await block(p), /^ {2}auth +keys checked \(1 key stored/m)
  const url = local(p.url)
  t.equal((await raw(url, 'GET', '/v1/agents')).status, 401, 'no key: 401')
  const listed = await raw(url, 'GET', '/v1/admin/api_keys', undefined, { 'x-api-key': key })
  t.equal(listed.status, 200)
  t.equal(listed.json.data[0].scope, 'admin')
  t.equal(listed.json.data[0].name, 'admin (TROUPE_ADMIN_KEY_FILE)')
  t.equal((await raw(url, 'GET', '/v1/agents', undefined, { authorization: `Bearer ${key}` })).status, 200)
  await p.stop()
  // A second start with the same file stores nothing new.
  const again = await files.start({ natsUrl: nats.url, env: { HOST: '0.0.0.0', TROUPE_ADMIN_KEY_FILE: path.join(dir, 'admin.key') } })
  const second = await raw(local(again.url), 'GET', '/v1/admin/api_keys', undefined, { 'x-api-key': key })
  t.equal(second.json.data.length, 1, 'one record for the file key')
  await again.stop()
  writeFileSync(path.join(dir, 'short.key'), 'short')
  const err = await files.start({ natsUrl: nats.url, env: { TROUPE_ADMIN_KEY_FILE: path.join(dir, 'short.key') } }).catch((e: Error) => e)
  t.match((err as Error).message, /TROUPE_ADMIN_KEY_FILE=.*short\.key: the file must hold one key of 32 to 512 characters/)
})

t.test('TROUPE_AUTH=keys checks keys before any exists: every API request 401', async (t) => {
  const fresh = await startNats()
  t.teardown(() => fresh.stopNow())
  const p = await files.start({ natsUrl: fresh.url, env: { TROUPE_AUTH: 'keys' } })
  t.match(await block(p), /^ {2}auth +keys checked \(0 keys stored/m)
  const r = await raw(p.url, 'GET', '/v1/agents', undefined, { 'x-api-key': 'anything' })
  t.equal(r.status, 401)
  t.equal(r.json.error.type, 'authentication_error')
  await p.stop()
})

t.test('strict mode keeps its header rules and checks keys when they are on', async (t) => {
  const fresh = await startNats()
  t.teardown(() => fresh.stopNow())
  const dir = mkdtempSync(path.join(tmpdir(), 'troupe-admin-key-'))
  const key = 'strict-admin-key-0123456789abcdefghij'
  writeFileSync(path.join(dir, 'admin.key'), key, { mode: 0o600 })
  const p = await files.start({ natsUrl: fresh.url, strict: true, env: { TROUPE_ADMIN_KEY_FILE: path.join(dir, 'admin.key') } })
  const headers = { 'anthropic-version': '2023-06-01', 'anthropic-beta': 'managed-agents-2026-04-01' }
  t.equal((await raw(p.url, 'GET', '/v1/agents', undefined, { 'x-api-key': key })).status, 400, 'a live key without the version header: 400')
  t.equal((await raw(p.url, 'GET', '/v1/agents', undefined, { ...headers, 'x-api-key': 'not-a-key' })).status, 401, 'the headers without a live key: 401')
  t.equal((await raw(p.url, 'GET', '/v1/agents', undefined, { ...headers, 'x-api-key': key })).status, 200)
  await p.stop()
})
