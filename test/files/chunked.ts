import { request } from 'node:http'

/** Posts a multipart upload sent chunked (no content-length): `size` bytes of file, ended or cut off midway. */
export function chunked(url: string, size: number, opts: { cut?: boolean } = {}): Promise<{ status: number; body: string } | 'reset'> {
  return new Promise((resolve) => {
    const req = request(`${url}/v1/files`, { method: 'POST', headers: { 'content-type': 'multipart/form-data; boundary=XX', 'transfer-encoding': 'chunked' } })
    req.on('response', (res) => {
      let body = ''
      res.on('data', (c) => (body += c))
      res.on('end', () => resolve({ status: res.statusCode!, body }))
    })
    req.on('error', () => resolve('reset'))
    req.write('--XX\r\ncontent-disposition: form-data; name="file"; filename="c.bin"\r\ncontent-type: application/octet-stream\r\n\r\n')
    const piece = Buffer.alloc(64 * 1024, 1)
    let sent = 0
    const more = () => {
      while (sent < size) {
        sent += piece.length
        if (!req.write(piece)) return void req.once('drain', more)
      }
      if (opts.cut) return void req.destroy()
      req.end('\r\n--XX--\r\n')
    }
    more()
  })
}
