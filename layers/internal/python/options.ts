/** @internal */
import type { Limits } from "../../../src/CodeRuntime.js"
import { defaultLimits, limitKeys } from "../../../src/CodeRuntime.js"
import type { Environment, IsolationLevel, Options } from "../../CodeRuntimePython.js"
import { isProbed } from "./environment.js"

/** @internal */
export interface ReadProbeOptions {
  readonly executable: string
  readonly unshare: string
  readonly bwrap: string
}

/** @internal */
export interface PythonLimits {
  readonly openFiles: number
  readonly fileBytes: number
  readonly messageBytes: number
}

/** @internal */
export interface ReadOptions {
  readonly probe: ReadProbeOptions
  readonly isolation: IsolationLevel
  readonly limits: Limits
  readonly python: PythonLimits
  readonly environment: Environment | undefined
}

const LIMIT_KEYS = limitKeys

const LEVELS: ReadonlyArray<string> = ["bwrap", "unshare-trusted-code-only", "process-trusted-code-only"]

const isCount = (value: unknown, least: number): value is number =>
  typeof value === "number" && Number.isSafeInteger(value) && value >= least

const command = (value: unknown, name: string, fallback: string): string | { readonly problem: string } => {
  if (value === undefined) return fallback
  if (typeof value !== "string" || value.length === 0 || value.includes("\0")) {
    return { problem: `${name} must be a non-empty command name or path` }
  }
  return value
}

type Fields = Record<string, unknown>

const readFields = (value: unknown, keys: ReadonlyArray<string>, what: string): Fields | string => {
  if (value === undefined) return {}
  if (typeof value !== "object" || value === null) return `${what} must be an object`
  const out: Fields = {}
  try {
    for (const key of keys) out[key] = (value as Fields)[key]
  } catch {
    return `${what} could not be read`
  }
  return out
}

/** @internal */
export const readProbeOptions = (options: unknown): ReadProbeOptions | string => {
  const fields = readFields(options, ["executable", "unshare", "bwrap"], "the options")
  if (typeof fields === "string") return fields
  return probeFrom(fields)
}

const probeFrom = (fields: Fields): ReadProbeOptions | string => {
  const executable = command(fields.executable, "executable", "python3")
  if (typeof executable !== "string") return executable.problem
  const unshare = command(fields.unshare, "unshare", "unshare")
  if (typeof unshare !== "string") return unshare.problem
  const bwrap = command(fields.bwrap, "bwrap", "bwrap")
  if (typeof bwrap !== "string") return bwrap.problem
  return { executable, unshare, bwrap }
}

/** @internal */
export const readOptions = (options: Options | undefined): ReadOptions | string => {
  const fields = readFields(
    options,
    [
      "executable",
      "unshare",
      "bwrap",
      "isolation",
      "limits",
      "maxOpenFiles",
      "maxFileBytes",
      "maxMessageBytes",
      "environment"
    ],
    "the options"
  )
  if (typeof fields === "string") return fields
  const probe = probeFrom(fields)
  if (typeof probe === "string") return probe
  const isolation = fields.isolation ?? "bwrap"
  if (typeof isolation !== "string" || !LEVELS.includes(isolation)) {
    return `isolation must be one of ${LEVELS.map((level) => JSON.stringify(level)).join(", ")}`
  }
  const given = readFields(fields.limits, LIMIT_KEYS, "limits")
  if (typeof given === "string") return given
  const limits: Record<string, number> = {}
  for (const key of LIMIT_KEYS) {
    const value = given[key] ?? defaultLimits[key]
    if (!isCount(value, 1)) return `limits.${key} must be a positive integer`
    limits[key] = value
  }
  const openFiles = fields.maxOpenFiles ?? 32
  if (!isCount(openFiles, 1)) return "maxOpenFiles must be a positive integer"
  const fileBytes = fields.maxFileBytes ?? 0
  if (!isCount(fileBytes, 0)) return "maxFileBytes must be a non-negative integer"
  const messageBytes = fields.maxMessageBytes ?? 64 * 1024 * 1024
  if (!isCount(messageBytes, 1)) return "maxMessageBytes must be a positive integer"
  const environment = fields.environment
  if (environment !== undefined && !isProbed(environment)) return "environment must be a result of CodeRuntimePython.probe"
  return {
    probe,
    isolation: isolation as IsolationLevel,
    limits: Object.freeze(limits as unknown as Limits),
    python: { openFiles, fileBytes, messageBytes },
    environment
  }
}
