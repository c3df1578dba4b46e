import { Packr } from 'msgpackr'

// Plain maps on the wire: records (msgpackr's structure sharing) would tie every reader to the writer's
// process-local structure table, which breaks between hosts.
const packr = new Packr({ useRecords: false, mapsAsObjects: true })

export const encode = (value: unknown): Uint8Array => packr.pack(value)
export const decode = <T = unknown>(bytes: Uint8Array): T => packr.unpack(bytes) as T
