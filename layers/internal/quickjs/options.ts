/**
 * Options of the QuickJS layers read once into a `Config`: each limit a positive integer, with
 * the engine's own bounds on memory and stack, unknown keys refused.
 *
 * @internal
 */
import type { Limits } from "../../../src/CodeRuntime.js"
import { defaultLimits, limitKeys } from "../../../src/CodeRuntime.js"
import type { Config } from "./config.js"
import { MAX_MEMORY_BYTES, MAX_STACK_BYTES, MIN_MEMORY_BYTES, MIN_STACK_BYTES } from "./config.js"

/** The largest delay a host timer accepts. */
const MAX_TIMER_MS = 2147483647

const describe = (value: unknown): string => {
  switch (typeof value) {
    case "number":
      return String(value)
    case "string":
      return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)
    case "object":
      return value === null ? "null" : "an object"
    default:
      return `a ${typeof value}`
  }
}

const limitProblem = (key: keyof Limits, value: unknown): string | undefined => {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value <= 0) {
    return `${key} must be a positive integer, got ${describe(value)}`
  }
  switch (key) {
    case "memoryBytes":
      if (value < MIN_MEMORY_BYTES) return `memoryBytes must be at least 16 MiB (${MIN_MEMORY_BYTES}), got ${value}`
      if (value > MAX_MEMORY_BYTES) return `memoryBytes must be at most 2 GiB (${MAX_MEMORY_BYTES}), got ${value}`
      return undefined
    case "stackBytes":
      if (value < MIN_STACK_BYTES) return `stackBytes must be at least 64 KiB (${MIN_STACK_BYTES}), got ${value}`
      if (value > MAX_STACK_BYTES) return `stackBytes must be at most 4 MiB (${MAX_STACK_BYTES}), got ${value}`
      return undefined
    case "cpuMs":
    case "wallMs":
      return value > MAX_TIMER_MS ? `${key} must be at most ${MAX_TIMER_MS}, got ${value}` : undefined
    default:
      return undefined
  }
}

/**
 * Reads `options` once (own fields only, unknown keys refused) into a `Config` and the values of
 * `extraKeys`, or says what is wrong. Total: hostile option objects give a message.
 *
 * @internal
 */
export const readConfig = (
  options: unknown,
  extraKeys: ReadonlyArray<string> = []
): { readonly config: Config; readonly extra: Readonly<Record<string, unknown>> } | { readonly problem: string } => {
  if (options === undefined) return { config: { limits: defaultLimits, typescript: true }, extra: {} }
  if (typeof options !== "object" || options === null) return { problem: "options must be an object" }
  const fields = new Map<string, unknown>()
  try {
    for (const key of Reflect.ownKeys(options)) {
      if (typeof key !== "string") return { problem: "options cannot have symbol keys" }
      fields.set(key, (options as Record<string, unknown>)[key])
    }
  } catch {
    return { problem: "options could not be read" }
  }
  const limits: Record<string, number> = { ...defaultLimits }
  let typescript = true
  const extra: Record<string, unknown> = {}
  for (const [key, value] of fields) {
    if (value === undefined) continue
    if ((limitKeys as ReadonlyArray<string>).includes(key)) {
      const problem = limitProblem(key as keyof Limits, value)
      if (problem !== undefined) return { problem }
      limits[key] = value as number
    } else if (key === "typescript") {
      if (typeof value !== "boolean") return { problem: `typescript must be a boolean, got ${describe(value)}` }
      typescript = value
    } else if (extraKeys.includes(key)) {
      extra[key] = value
    } else {
      return { problem: `unknown option ${JSON.stringify(key)}` }
    }
  }
  return { config: { limits: Object.freeze(limits) as unknown as Limits, typescript }, extra }
}

