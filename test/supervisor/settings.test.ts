import t from 'tap'
import { readConfig } from '../../supervisor/config.js'
import '../helpers/keepalive.js'
import { scratch } from '../helpers/scratch.js'

// Settings a start cannot work with stop it at once, naming the variable and what it accepts (issue: a model base URL
// without a scheme was taken, and every turn then failed; LOG_LEVEL=verbose was refused in the logging library's words;
// TROUPE_STRICT's message named fewer values than it takes).

const files = scratch('troupe-settings-')

t.test('read: what each accepts, and the message of what it refuses', async (t) => {
  const url = (v: string) => readConfig({ TROUPE_MODEL_BASE_URL: v }, false).modelBaseUrl
  t.equal(url('http://127.0.0.1:9000'), 'http://127.0.0.1:9000')
  t.equal(url(' https://models.example.com/v1 '), 'https://models.example.com/v1')
  t.equal(url(''), undefined, 'empty is unset')
  for (const bad of ['localhost:9000', '127.0.0.1:9000', 'models.example.com', 'ftp://models.example.com', 'http://', 'file:///tmp/x']) {
    t.throws(
      () => url(bad),
      { message: `TROUPE_MODEL_BASE_URL must be an http:// or https:// URL, such as http://127.0.0.1:9000 (was ${JSON.stringify(bad)})` },
      bad,
    )
  }

  const level = (v: string | undefined) => readConfig({ LOG_LEVEL: v }, false).logLevel
  t.equal(level(undefined), 'info')
  t.equal(level('DEBUG'), 'debug', 'any case')
  t.equal(level('silent'), 'silent')
  t.throws(() => level('verbose'), { message: 'LOG_LEVEL must be one of trace, debug, info, warn, error, fatal, silent (was "verbose")' })

  const strict = (v: string) => readConfig({ TROUPE_STRICT: v }, false).strict
  for (const on of ['1', 'true', 'on', 'TRUE', ' On ']) t.equal(strict(on), true, on)
  for (const off of ['0', 'false', 'off', 'OFF', '']) t.equal(strict(off), false, off || '(empty)')
  t.throws(() => strict('yes'), { message: 'TROUPE_STRICT must be 1, true or on, or 0, false or off (was "yes")' })

  const mcp = (v: string) => readConfig({ TROUPE_MCP_ALLOW_HOSTS: v }, false).mcpAllowHosts
  t.same([...mcp('').hosts], [], 'empty is none')
  t.same([...mcp('MCP.internal, 127.0.0.1').hosts], ['mcp.internal'])
  t.equal(mcp('MCP.internal, 127.0.0.1,10.0.0.0/8').ranges.length, 2)
  t.throws(() => mcp('http://mcp.internal'), { message: 'TROUPE_MCP_ALLOW_HOSTS: "http://mcp.internal" is not a host name, an address or a CIDR range' })
})

t.test('a start refuses each, naming it, before it starts anything', async (t) => {
  for (const [name, value, said] of [
    ['TROUPE_MODEL_BASE_URL', 'localhost:9000', /troupe: TROUPE_MODEL_BASE_URL must be an http:\/\/ or https:\/\/ URL.*\(was "localhost:9000"\)/],
    ['LOG_LEVEL', 'verbose', /troupe: LOG_LEVEL must be one of trace, debug, info, warn, error, fatal, silent \(was "verbose"\)/],
    ['TROUPE_STRICT', 'yes', /troupe: TROUPE_STRICT must be 1, true or on, or 0, false or off \(was "yes"\)/],
    ['TROUPE_MCP_ALLOW_HOSTS', 'mcp.internal:8080', /troupe: TROUPE_MCP_ALLOW_HOSTS: "mcp\.internal:8080" is not a host name, an address or a CIDR range/],
  ] as const) {
    const err = await files.start({ role: 'start', env: { NATS_URL: '', TROUPE_DATA_DIR: files.dataDir(), [name]: value } }).then(
      () => undefined,
      (e: Error) => e.message,
    )
    t.match(err, /troupe exited with 1/, `${name}=${value} stops the start`)
    t.match(err, said, 'naming it and what it takes')
    t.notMatch(err, /listening on/, 'nothing started')
  }
})
