/** The start-up error for an address that cannot be bound, the same on every transport: it names what to change. */
export function cannotListen(host: string, port: number, err: NodeJS.ErrnoException): Error {
  return new Error(`cannot listen on ${host}:${port}: ${why(err)}`)
}

function why(err: NodeJS.ErrnoException): string {
  if (err.code === 'EADDRINUSE') return 'port in use (another process is listening there; stop it or set PORT)'
  if (err.code === 'EACCES') return 'permission denied (ports below 1024 need privileges; set PORT)'
  if (err.code === 'EADDRNOTAVAIL' || err.code === 'ENOTFOUND') return 'no such address on this machine (check HOST)'
  return err.message
}
