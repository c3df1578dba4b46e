// The tools suite again on the local backend (TROUPE_SANDBOX=local): what runs on the host process must keep working
// exactly as before the isolated backend existed, whichever backend the machine would pick by default.
process.env.TROUPE_SANDBOX = 'local'
await import('./tools.test.js')
