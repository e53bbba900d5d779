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
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import type * as Schema from "effect/Schema"
import type { AgentId } from "./Execution.js"
import * as internal from "./internal/approval/grants.js"
import { ApprovalGrantsError } from "./internal/approval/grantsError.js"
import * as errors from "./internal/approval/grantsError.js"
import * as input from "./internal/approval/grantsInput.js"

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
export const ApprovalGrantsErrorReason = errors.ApprovalGrantsErrorReason

/**
 * @since 0.1.0
 * @category errors
 */
export type ApprovalGrantsErrorReason = Schema.Schema.Type<typeof ApprovalGrantsErrorReason>

export {
  /**
   * A grants operation failed: a bad argument or option, or the storage. `reason` is absent for
   * storage failures.
   *
   * @since 0.1.0
   * @category errors
   */
  ApprovalGrantsError
}

/**
 * The most entries a query's lineage may have.
 *
 * @since 0.1.0
 * @category models
 */
export const maxLineage = input.maxLineage

/**
 * Whether a grant is live at `now` (epoch ms): it has no expiry or `now` is before it.
 *
 * @since 0.1.0
 * @category guards
 */
export const isLive: (grant: Grant, now: number) => boolean = internal.isLive

/**
 * The grant that answers `query` at `now` among `grants` (in creation order): the most specific
 * live match — agent nearest in the lineage, then digest over tool, then the earliest.
 *
 * @since 0.1.0
 * @category combinators
 */
export const select: (grants: Iterable<Grant>, query: Query, now: number) => Option.Option<Grant> = internal.select

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
 * The service over a backend's {@link Store}: reads and checks every input once, stamps grants
 * with Effect's `Clock`, prunes expired grants when a grant is stored, and matches with
 * {@link select}.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: (store: Store) => Service = internal.make

/**
 * A fresh in-memory store: ids `grant-1`, `grant-2`, … per store. Nothing survives it.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeMemoryStore: Effect.Effect<Store> = internal.makeMemoryStore

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
