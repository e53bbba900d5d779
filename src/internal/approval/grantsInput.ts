/**
 * Reading what a grants caller hands over: a grant input, a query and an id, each of unknown
 * shape, read once field by field and checked (well-formed text, a positive finite ttl, a bounded
 * lineage). A bad one is an `ApprovalGrantsError` naming the field, never a throw.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type { Query } from "../../ApprovalGrants.js"
import { ApprovalGrantsError } from "./grantsError.js"

/** @internal */
export const maxLineage = 10_000

const causeMessage = (cause: unknown): string => {
  try {
    if (cause instanceof Error) return String(cause.message)
    return typeof cause === "string" ? cause : typeName(cause)
  } catch {
    return "unknown error"
  }
}

const typeName = (value: unknown): string => {
  if (value === null) return "null"
  const type = typeof value
  if (type === "undefined") return type
  if (type !== "object") return `a ${type}`
  try {
    return Array.isArray(value) ? "an array" : "an object"
  } catch {
    return "an object"
  }
}

/** @internal */
export const invalid = (field: string, message: string): ApprovalGrantsError =>
  new ApprovalGrantsError({ message, reason: { _tag: "InvalidInput", field } })

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

const TEXT_RULE = "a non-empty string of well-formed Unicode without NUL characters"

const readText = (field: string, label: string, value: unknown): Either.Either<string, ApprovalGrantsError> => {
  if (typeof value !== "string") return Either.left(invalid(field, `${label} must be ${TEXT_RULE}, not ${typeName(value)}`))
  if (value === "") return Either.left(invalid(field, `${label} must be ${TEXT_RULE}, not an empty string`))
  if (value.includes("\u0000")) {
    return Either.left(invalid(field, `${label} must be ${TEXT_RULE}, not a string containing a NUL character`))
  }
  if (LONE_SURROGATE.test(value)) {
    return Either.left(invalid(field, `${label} must be ${TEXT_RULE}, not a string with a lone surrogate`))
  }
  return Either.right(value)
}

const readOptionalText = (
  field: string,
  label: string,
  value: unknown
): Either.Either<string | undefined, ApprovalGrantsError> =>
  value === undefined ? Either.right(undefined) : readText(field, label, value)

/** @internal */
export const TTL_RULE = "approval grant ttl must be a positive, finite duration"

const describeTtl = (value: unknown): string => {
  if (typeof value === "number") return `not ${String(value)}`
  if (typeof value === "bigint") return `not ${value.toString()}n`
  if (typeof value === "string") return `not ${JSON.stringify(value.length <= 40 ? value : `${value.slice(0, 40)}…`)}`
  if (Duration.isDuration(value)) {
    return Duration.isZero(value) ? "not a zero duration" : "not an infinite duration"
  }
  return `not ${typeName(value)}`
}

const ttlMillis = (ttl: unknown): number | undefined => {
  if (typeof ttl === "number") return Number.isFinite(ttl) && ttl > 0 ? ttl : undefined
  if (typeof ttl === "bigint") return ttl > 0n ? Number(ttl) / 1_000_000 : undefined
  let duration: Option.Option<Duration.Duration>
  if (typeof ttl === "string") {
    duration = Duration.decodeUnknown(ttl)
  } else if (Array.isArray(ttl)) {
    const length: unknown = ttl.length
    if (length !== 2) return undefined
    const seconds: unknown = ttl[0]
    const nanos: unknown = ttl[1]
    if (typeof seconds !== "number" || typeof nanos !== "number" || seconds < 0 || nanos < 0) return undefined
    duration = Duration.decodeUnknown([seconds, nanos])
  } else if (Duration.isDuration(ttl)) {
    duration = Option.some(ttl)
  } else {
    return undefined
  }
  if (Option.isNone(duration)) return undefined
  const millis = Duration.toMillis(duration.value)
  return Number.isFinite(millis) && millis > 0 ? millis : undefined
}

const readTtl = (ttl: unknown): Either.Either<number | undefined, ApprovalGrantsError> => {
  if (ttl === undefined) return Either.right(undefined)
  let millis: number | undefined
  try {
    millis = ttlMillis(ttl)
  } catch (error) {
    return Either.left(invalid("ttl", `approval grant ttl could not be read: ${causeMessage(error)}`))
  }
  let described: string
  try {
    described = describeTtl(ttl)
  } catch {
    described = "not a duration"
  }
  return millis === undefined
    ? Either.left(invalid("ttl", `${TTL_RULE}, ${described}`))
    : Either.right(Math.ceil(millis))
}

/** @internal */
export interface ReadInput {
  readonly toolName: string
  readonly agent: string | undefined
  readonly argumentsDigest: string | undefined
  readonly ttl: number | undefined
}

const readRecord = (
  value: unknown,
  label: string
): Either.Either<Readonly<Record<string, unknown>>, ApprovalGrantsError> => {
  try {
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      return Either.left(invalid("input", `${label} must be an object, not ${typeName(value)}`))
    }
  } catch (error) {
    return Either.left(invalid("input", `${label} could not be read: ${causeMessage(error)}`))
  }
  return Either.right(value as Readonly<Record<string, unknown>>)
}

/**
 * Reads a grant input of unknown shape once, field by field (`ttl` in whole milliseconds).
 *
 * @internal
 */
export const readGrantInput = (input: unknown): Either.Either<ReadInput, ApprovalGrantsError> =>
  Either.flatMap(readRecord(input, "approval grant input"), (record) => {
    let fields: { toolName: unknown; agent: unknown; argumentsDigest: unknown; ttl: unknown }
    try {
      const { agent, argumentsDigest, toolName, ttl } = record
      fields = { toolName, agent, argumentsDigest, ttl }
    } catch (error) {
      return Either.left(invalid("input", `approval grant input could not be read: ${causeMessage(error)}`))
    }
    return Either.all({
      toolName: readText("toolName", "approval grant toolName", fields.toolName),
      agent: readOptionalText("agent", "approval grant agent", fields.agent),
      argumentsDigest: readOptionalText("argumentsDigest", "approval grant argumentsDigest", fields.argumentsDigest),
      ttl: readTtl(fields.ttl)
    })
  })

const readLineage = (lineage: unknown): Either.Either<ReadonlyArray<string>, ApprovalGrantsError> => {
  const rule = `approval grant query lineage must be an array of at most ${maxLineage} agent ids`
  let length: unknown
  try {
    if (!Array.isArray(lineage)) return Either.left(invalid("lineage", `${rule}, not ${typeName(lineage)}`))
    length = lineage.length
  } catch (error) {
    return Either.left(invalid("lineage", `approval grant query lineage could not be read: ${causeMessage(error)}`))
  }
  if (typeof length !== "number" || !Number.isSafeInteger(length) || length < 0 || length > maxLineage) {
    return Either.left(invalid("lineage", `${rule}, not an array of ${typeof length === "number" ? String(length) : "unknown"} entries`))
  }
  const agents: Array<string> = []
  for (let index = 0; index < length; index++) {
    let entry: unknown
    try {
      entry = (lineage as ReadonlyArray<unknown>)[index]
    } catch (error) {
      return Either.left(
        invalid("lineage", `approval grant query lineage[${index}] could not be read: ${causeMessage(error)}`)
      )
    }
    const agent = readText("lineage", `approval grant query lineage[${index}]`, entry)
    if (Either.isLeft(agent)) return Either.left(agent.left)
    agents.push(agent.right)
  }
  return Either.right(agents)
}

/**
 * Reads a query of unknown shape once, field by field, into a detached frozen copy.
 *
 * @internal
 */
export const readQuery = (query: unknown): Either.Either<Query, ApprovalGrantsError> =>
  Either.flatMap(readRecord(query, "approval grant query"), (record) => {
    let fields: { toolName: unknown; lineage: unknown; argumentsDigest: unknown }
    try {
      const { argumentsDigest, lineage, toolName } = record
      fields = { toolName, lineage, argumentsDigest }
    } catch (error) {
      return Either.left(invalid("input", `approval grant query could not be read: ${causeMessage(error)}`))
    }
    return Either.map(
      Either.all({
        toolName: readText("toolName", "approval grant query toolName", fields.toolName),
        lineage: readLineage(fields.lineage),
        argumentsDigest: readText("argumentsDigest", "approval grant query argumentsDigest", fields.argumentsDigest)
      }),
      (read): Query => Object.freeze({ ...read, lineage: Object.freeze(read.lineage) })
    )
  })

/** @internal */
export const readId = (id: unknown): Either.Either<string, ApprovalGrantsError> =>
  typeof id === "string"
    ? Either.right(id)
    : Either.left(invalid("id", `approval grant id must be a string, not ${typeName(id)}`))
