/** Raised for tool inputs of the wrong shape; the sandbox turns it into an is_error result. */
export class InputError extends Error {}

export type Fields = Record<string, unknown>

export function asFields(input: unknown): Fields {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new InputError('input must be a JSON object')
  }
  return input as Fields
}

export function requireString(o: Fields, key: string, { nonEmpty = false } = {}): string {
  const v = o[key]
  if (typeof v !== 'string') throw new InputError(`"${key}" is required and must be a string`)
  if (nonEmpty && v.length === 0) throw new InputError(`"${key}" must not be empty`)
  return v
}

export function optionalString(o: Fields, key: string): string | undefined {
  const v = o[key]
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'string') throw new InputError(`"${key}" must be a string`)
  return v
}

export function optionalBoolean(o: Fields, key: string): boolean | undefined {
  const v = o[key]
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'boolean') throw new InputError(`"${key}" must be a boolean`)
  return v
}

export function optionalPositiveInt(o: Fields, key: string): number | undefined {
  const v = o[key]
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0) {
    throw new InputError(`"${key}" must be a positive integer`)
  }
  return v
}
