import { type PromFamily, parsePromText } from '../helpers/prom-text.js'

export { highCardinality } from '../helpers/prom-text.js'

/** `GET <url>/metrics`, checked as Prometheus reads it: status, content type and a strict parse. */
export async function scrape(url: string): Promise<Map<string, PromFamily>> {
  const res = await fetch(`${url}/metrics`)
  const text = await res.text()
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}: ${text.slice(0, 300)}`)
  const type = res.headers.get('content-type') ?? ''
  if (!/^text\/plain; version=0\.0\.4/.test(type)) throw new Error(`GET /metrics content-type ${type}`)
  return parsePromText(text)
}
