import t, { type Test } from 'tap'
import '../helpers/keepalive.js'
import { raw, type StartOptions, type TroupeProcess } from '../helpers/troupe.js'
import { scratch } from '../helpers/scratch.js'
import { until } from '../helpers/wait.js'

// Strict mode is a safety switch: every way a person turns it on must turn it on (the banner says so and a request
// without the headers is refused), and anything `troupe` does not understand must stop it rather than be dropped.

const files = scratch('troupe-strict-')

/** `troupe start` on an embedded NATS and a data directory of its own. */
const start = async (opts: StartOptions) => {
  const p = await files.start({ role: 'start', ...opts, env: { NATS_URL: '', TROUPE_STRICT: '', TROUPE_DATA_DIR: files.dataDir(), ...opts.env } })
  // The start-up block follows the line that says where it listens.
  await until('the start-up block', () => /^ {2}version /m.test(p.stdout()), 5000)
  return p
}

const refusesWithoutHeaders = async (t: Test, p: TroupeProcess) => {
  t.match(p.stdout(), /^ {2}strict +on /m, 'the banner says strict on')
  const r = await raw(p.url, 'GET', '/v1/environments')
  t.equal(r.status, 401, 'a request without an API key is refused')
  t.equal(r.json.error.type, 'authentication_error')
  await p.stop()
}

t.test('npm start -- --strict', async (t) => {
  await refusesWithoutHeaders(t, await start({ command: ['npm', 'start', '--', '--strict'] }))
})

t.test('npm start -strict: npm keeps the flag for itself, and hands it over as npm_config_strict', async (t) => {
  const p = await start({ command: ['npm', 'start', '-strict'] })
  t.match(p.logs(), /Unknown cli config "--strict"/, "npm's own warning is still there")
  await refusesWithoutHeaders(t, p)
})

t.test('TROUPE_STRICT=1, whatever launches troupe', async (t) => {
  await refusesWithoutHeaders(t, await start({ env: { TROUPE_STRICT: '1' } }))
})

t.test('off unless asked', async (t) => {
  const p = await start({ env: { TROUPE_STRICT: '0' } })
  t.match(p.stdout(), /^ {2}strict +off$/m)
  t.equal((await raw(p.url, 'GET', '/v1/environments')).status, 200)
  await p.stop()
})

t.test('what troupe does not understand stops it, named', async (t) => {
  const refusal = (opts: StartOptions) =>
    start(opts).then(
      () => t.fail('started'),
      (err: Error) => err.message,
    )
  const misspelt = await refusal({ command: ['npm', 'start', '--', '--stirct'] })
  t.match(misspelt, /troupe exited with 2/, 'through npm too')
  t.match(misspelt, /troupe: unknown option --stirct/)
  t.match(await refusal({ env: { TROUPE_STRICT: 'yes please' } }), /TROUPE_STRICT must be 1, true or on, or 0, false or off \(was "yes please"\)/)
  t.match(await refusal({ command: ['npm', 'start', '--', 'extra'] }), /troupe: unexpected argument extra/)
})
