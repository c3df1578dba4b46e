// The session outputs suite on the local backend (TROUPE_SANDBOX=local): its outputs folder is the session
// directory's outputs/ too, and the same rules hold (a symlink there to /etc/passwd is never published).
process.env.TROUPE_SANDBOX = 'local'
await import('./outputs.test.js')
