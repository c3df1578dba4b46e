/** RFC 3339 with millisecond precision, always UTC. */
export const now = (): string => new Date().toISOString()
