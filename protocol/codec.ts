import { Packr } from 'msgpackr'

// Plain maps on the wire: records (msgpackr's structure sharing) would tie every reader to the writer's
// process-local structure table, which breaks between hosts.
const packr = new Packr({ useRecords: false, mapsAsObjects: true })

/**
 * msgpackr packs into one buffer per thread that it grows to 4× the largest message so far (2× past 16 MiB) and
 * keeps: one 8 MiB event would hold 32 MiB, and a 32 MiB body 64 MiB, for the life of the process. After a
 * message this large, packing starts over in a small buffer; the large one goes once the message is let go.
 */
const KEEP_BUFFER_UP_TO = 1024 * 1024

export const encode = (value: unknown): Uint8Array => {
  const bytes = packr.pack(value)
  if (bytes.byteLength > KEEP_BUFFER_UP_TO) packr.useBuffer(Buffer.allocUnsafeSlow(8192))
  return bytes
}
export const decode = <T = unknown>(bytes: Uint8Array): T => packr.unpack(bytes) as T
