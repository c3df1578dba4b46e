// session-stream.test.ts with every SSE tail listening over NATS (TROUPE_LOCAL_CALLS=0), as a gateway does for a
// session whose owner runs in another process.
process.env.TEST_SSE_VIA_NATS = '1'
await import('./session-stream.test.js')
