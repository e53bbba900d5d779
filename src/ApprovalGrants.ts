/**
 * Remembered approvals: "always allow this" stored as grants. A grant names a tool, optionally
 * an agent (absent = every agent) and optionally the digest of one set of arguments (absent =
 * any arguments), and may expire. The approval service looks for a live matching grant before
 * it asks anyone; a grant only ever answers an `ask`, so a deny of a policy or a guard still wins.
 *
 * **Matching.** A grant matches a {@link Query} when its tool name equals the query's, its agent
 * is absent or one of the query's `lineage` (the calling agent, then its ancestors — a grant
 * given to a parent agent covers its children, not its siblings), and its digest is absent or
 * equal to the query's `argumentsDigest`. A query with an empty lineage (a call without an
 * agent) is matched by global grants only. When several grants match, the most specific wins:
 * first the agent nearest in the lineage (the calling agent, then its parent, …, a global grant
 * last), then a digest grant over a tool grant, then the earliest created.
 *
 * **Time.** Creation and expiry use Effect's `Clock` (so `TestClock.adjust` expires grants). A
 * grant with `expiresAt` is live while the clock reads strictly less than it; expired grants are
 * never returned and are deleted when the next grant is stored.
 *
 * The memory layer is here ({@link layerMemory}); the SQL layer is `ApprovalGrantsSql`.
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { AgentId } from "./Execution.js"

/**
 * A stored grant. `agent` absent means every agent; `argumentsDigest` absent means any
 * arguments. `createdAt` and `expiresAt` are epoch milliseconds from Effect's `Clock`. Grants
 * handed out are frozen.
 *
 * @since 0.1.0
 * @category models
 */
export interface Grant {
  readonly id: string
  readonly toolName: string
  readonly agent?: AgentId
  readonly argumentsDigest?: string
  readonly createdAt: number
  readonly expiresAt?: number
}

/**
 * What to remember. `ttl` (positive and finite; rounded up to whole milliseconds) sets
 * `expiresAt = createdAt + ttl`; without it the grant lives until revoked. Every string is
 * non-empty, well-formed Unicode without NUL characters (so every backend stores it unchanged).
 *
 * @since 0.1.0
 * @category models
 */
export interface GrantInput {
  readonly toolName: string
  readonly agent?: AgentId | undefined
  readonly argumentsDigest?: string | undefined
  readonly ttl?: Duration.DurationInput | undefined
}

/**
 * A call looking for a grant: its tool, its agent lineage (the calling agent, then its
 * ancestors nearest first; empty for a call without an agent, at most {@link maxLineage}
 * entries) and the digest of its arguments.
 *
 * @since 0.1.0
 * @category models
 */
export interface Query {
  readonly toolName: string
  readonly lineage: ReadonlyArray<AgentId>
  readonly argumentsDigest: string
}

/**
 * The grants service. Every input is read once and checked; a bad one fails with an
 * {@link ApprovalGrantsError} (reason `InvalidInput`), never a throw or a defect.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service {
  /** Stores a grant and returns it with its new id (unique within the backend). */
  readonly grant: (input: GrantInput) => Effect.Effect<Grant, ApprovalGrantsError>
  /** A live (unexpired, unrevoked) grant matching the query, if any — the most specific one. */
  readonly find: (query: Query) => Effect.Effect<Option.Option<Grant>, ApprovalGrantsError>
  /** Revokes a grant by id: `true` when a live grant was revoked, `false` for an unknown, revoked or expired id. */
  readonly revoke: (id: string) => Effect.Effect<boolean, ApprovalGrantsError>
  /** The live grants in creation order. */
  readonly list: Effect.Effect<ReadonlyArray<Grant>, ApprovalGrantsError>
}

/**
 * @since 0.1.0
 * @category tags
 */
export class ApprovalGrants extends Context.Tag("effect-tool-runtime/ApprovalGrants")<ApprovalGrants, Service>() {}

/**
 * Why an {@link ApprovalGrantsError} happened, when it is a caller's or a configuration's fault:
 * a bad service argument (`InvalidInput`, naming the field), a bad layer option
 * (`InvalidOption`), or an existing SQL table of another layout (`TableLayout`).
 *
 * @since 0.1.0
 * @category errors
 */
export const ApprovalGrantsErrorReason = Schema.Union(
  Schema.TaggedStruct("InvalidInput", { field: Schema.String }),
  Schema.TaggedStruct("InvalidOption", { option: Schema.String }),
  Schema.TaggedStruct("TableLayout", { table: Schema.String, differences: Schema.Array(Schema.String) })
).annotations({ identifier: "ApprovalGrantsErrorReason" })

/**
 * @since 0.1.0
 * @category errors
 */
export type ApprovalGrantsErrorReason = Schema.Schema.Type<typeof ApprovalGrantsErrorReason>

/**
 * A grants operation failed: a bad argument or option, or the storage. `reason` is absent for
 * storage failures.
 *
 * @since 0.1.0
 * @category errors
 */
export class ApprovalGrantsError
  extends Schema.TaggedError<ApprovalGrantsError>("effect-tool-runtime/ApprovalGrantsError")("ApprovalGrantsError", {
    message: Schema.String,
    reason: Schema.optionalWith(ApprovalGrantsErrorReason, { exact: true })
  })
{}

/**
 * The most entries a query's lineage may have.
 *
 * @since 0.1.0
 * @category models
 */
export const maxLineage = 10_000

// ---------------------------------------------------------------------------------------------
// reading hostile input
// ---------------------------------------------------------------------------------------------

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

const invalid = (field: string, message: string): ApprovalGrantsError =>
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

const TTL_RULE = "approval grant ttl must be a positive, finite duration"

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

interface ReadInput {
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

/** Reads a grant input of unknown shape once, field by field (`ttl` in whole milliseconds). */
const readGrantInput = (input: unknown): Either.Either<ReadInput, ApprovalGrantsError> =>
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

/** Reads a query of unknown shape once, field by field, into a detached frozen copy. */
const readQuery = (query: unknown): Either.Either<Query, ApprovalGrantsError> =>
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

const readId = (id: unknown): Either.Either<string, ApprovalGrantsError> =>
  typeof id === "string"
    ? Either.right(id)
    : Either.left(invalid("id", `approval grant id must be a string, not ${typeName(id)}`))

// ---------------------------------------------------------------------------------------------
// matching
// ---------------------------------------------------------------------------------------------

/**
 * Whether a grant is live at `now` (epoch ms): it has no expiry or `now` is before it.
 *
 * @since 0.1.0
 * @category guards
 */
export const isLive = (grant: Grant, now: number): boolean => grant.expiresAt === undefined || now < grant.expiresAt

/**
 * How specific a matching grant is for a query (lower is more specific), or `undefined` when it
 * does not match. Liveness is not considered.
 */
const rank = (grant: Grant, query: Query): number | undefined => {
  if (grant.toolName !== query.toolName) return undefined
  let agentRank = query.lineage.length
  if (grant.agent !== undefined) {
    agentRank = query.lineage.indexOf(grant.agent)
    if (agentRank < 0) return undefined
  }
  if (grant.argumentsDigest !== undefined && grant.argumentsDigest !== query.argumentsDigest) return undefined
  return agentRank * 2 + (grant.argumentsDigest === undefined ? 1 : 0)
}

/**
 * The grant that answers `query` at `now` among `grants` (in creation order): the most specific
 * live match — agent nearest in the lineage, then digest over tool, then the earliest.
 *
 * @since 0.1.0
 * @category combinators
 */
export const select = (grants: Iterable<Grant>, query: Query, now: number): Option.Option<Grant> => {
  let best: Grant | undefined
  let bestRank = Infinity
  for (const grant of grants) {
    if (!isLive(grant, now)) continue
    const r = rank(grant, query)
    if (r !== undefined && r < bestRank) {
      best = grant
      bestRank = r
    }
  }
  return Option.fromNullable(best)
}

// ---------------------------------------------------------------------------------------------
// service over a store
// ---------------------------------------------------------------------------------------------

/**
 * What a backend provides to {@link make}: storage only; checking, time, expiry and matching are
 * done by {@link make}, identically for every backend.
 *
 * @since 0.1.0
 * @category models
 */
export interface Store {
  /** A new id, never handed out before by this store. */
  readonly nextId: Effect.Effect<string, ApprovalGrantsError>
  /** Stores a checked, frozen grant. */
  readonly insert: (grant: Grant) => Effect.Effect<void, ApprovalGrantsError>
  /** Stored grants that may match `query` (any superset of the matches), in creation order. */
  readonly candidates: (query: Query) => Effect.Effect<ReadonlyArray<Grant>, ApprovalGrantsError>
  /** Every stored grant in creation order. */
  readonly all: Effect.Effect<ReadonlyArray<Grant>, ApprovalGrantsError>
  /** Deletes a grant by id if it is live at `now`: `true` when one was deleted. */
  readonly remove: (id: string, now: number) => Effect.Effect<boolean, ApprovalGrantsError>
  /** Deletes every grant that has expired at `now`. */
  readonly prune: (now: number) => Effect.Effect<void, ApprovalGrantsError>
}

/**
 * The grant record for checked input, created at `now` (epoch ms).
 */
const build = (id: string, input: ReadInput, now: number): Either.Either<Grant, ApprovalGrantsError> => {
  const grant: { -readonly [K in keyof Grant]: Grant[K] } = { id, toolName: input.toolName, createdAt: now }
  if (input.agent !== undefined) grant.agent = input.agent
  if (input.argumentsDigest !== undefined) grant.argumentsDigest = input.argumentsDigest
  if (input.ttl !== undefined) {
    const expiresAt = now + input.ttl
    if (!Number.isSafeInteger(expiresAt)) {
      return Either.left(invalid("ttl", `${TTL_RULE}, not one that ends after the largest safe timestamp`))
    }
    grant.expiresAt = expiresAt
  }
  return Either.right(Object.freeze(grant))
}

/**
 * The service over a backend's {@link Store}: reads and checks every input once, stamps grants
 * with Effect's `Clock`, prunes expired grants when a grant is stored, and matches with
 * {@link select}.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (store: Store): Service => {
  const grant = Effect.fn("ApprovalGrants.grant")(function*(input: GrantInput) {
    const read = yield* readGrantInput(input)
    const now = yield* Clock.currentTimeMillis
    yield* store.prune(now)
    const id = yield* store.nextId
    const created = yield* build(id, read, now)
    yield* store.insert(created)
    return created
  })
  const find = Effect.fn("ApprovalGrants.find")(function*(query: Query) {
    const read = yield* readQuery(query)
    const candidates = yield* store.candidates(read)
    const now = yield* Clock.currentTimeMillis
    return select(candidates, read, now)
  })
  const revoke = Effect.fn("ApprovalGrants.revoke")(function*(id: string) {
    const read = yield* readId(id)
    const now = yield* Clock.currentTimeMillis
    return yield* store.remove(read, now)
  })
  const list = Effect.flatMap(store.all, (grants) =>
    Effect.map(Clock.currentTimeMillis, (now) => Object.freeze(grants.filter((g) => isLive(g, now)))))
  return { grant, find, revoke, list }
}

// ---------------------------------------------------------------------------------------------
// memory
// ---------------------------------------------------------------------------------------------

/**
 * A fresh in-memory store: ids `grant-1`, `grant-2`, … per store. Nothing survives it.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeMemoryStore: Effect.Effect<Store> = Effect.sync(() => {
  const grants: Array<Grant> = []
  let counter = 0
  const prune = (now: number) => {
    let kept = 0
    for (const grant of grants) if (isLive(grant, now)) grants[kept++] = grant
    grants.length = kept
  }
  return {
    nextId: Effect.sync(() => `grant-${++counter}`),
    insert: (grant) =>
      Effect.sync(() => {
        grants.push(grant)
      }),
    candidates: (query) => Effect.sync(() => grants.filter((g) => g.toolName === query.toolName)),
    all: Effect.sync(() => grants.slice()),
    remove: (id, now) =>
      Effect.sync(() => {
        const index = grants.findIndex((g) => g.id === id)
        if (index < 0) return false
        const [removed] = grants.splice(index, 1)
        return isLive(removed!, now)
      }),
    prune: (now) => Effect.sync(() => prune(now))
  }
})

/**
 * A fresh in-memory grants service.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeMemory: Effect.Effect<Service> = Effect.map(makeMemoryStore, make)

/**
 * Grants in memory, fresh per layer build; ids are `grant-1`, `grant-2`, …
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory: Layer.Layer<ApprovalGrants> = Layer.effect(ApprovalGrants, makeMemory)
