/**
 * Agent sessions on `@effect/cluster` (sharded entities over runners): a session's durable batches
 * and approvals are owned by the runner that owns the session's shard, and any process — a runner
 * or a client-only process such as a web tier — sends to it. When a runner dies, its shards move
 * and its batches resume on a survivor with the guarantees of durable turns (`DurableTurn`).
 *
 * - `ToolSessions` (any process): `runBatch`, `start`, `pending`, `answer`, `records`, `stop` for a
 *   session id; the message is routed to the session's owner.
 * - The layers that make a process a runner or a client are in
 *   `effect-tool-runtime/layers/ClusterTurns` (one runner on a libSQL file; several runners over
 *   PostgreSQL with socket runners; client-only).
 *
 * Every runner must build the same tools and policies. Name them with `toolSet` (the same name on
 * every runner and client): a message sent for another tool set is refused with
 * `ToolSetMismatch`, never run against the wrong tools.
 *
 * Needs the optional peers `@effect/cluster`, `@effect/workflow` and `@effect/rpc`; on its own
 * subpath (`effect-tool-runtime/ToolSession`).
 *
 * @since 0.1.0
 */
import type { Sharding } from "@effect/cluster/Sharding"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { Answer } from "./ApprovalService.js"
import type { BatchStatus, PendingApproval } from "./DurableTurn.js"
import type { AgentId } from "./Execution.js"
import type { BatchResult, ModelToolCall } from "./Scheduler.js"
import type { LogContents } from "./ToolCallLog.js"
import * as client from "./internal/cluster/client.js"
import * as internal from "./internal/cluster/session.js"

/**
 * A session operation failed: `ToolSetMismatch` (the runner's tools are not the sender's), a
 * durable turn error's reason (`InvalidOption`, `NotFound`, `Mismatch`, `Storage`, `Answered`,
 * `InvalidAnswer`), or `LogFailed` (the batch's journal failed, as `SchedulerError` in memory).
 *
 * @since 0.1.0
 * @category errors
 */
export const ToolSessionError = internal.ToolSessionError

/**
 * @since 0.1.0
 * @category errors
 */
export type ToolSessionError = internal.ToolSessionError

/**
 * @since 0.1.0
 * @category models
 */
export interface BatchOptions {
  readonly batchId: string
  readonly agent?: AgentId | undefined
  readonly maxParallel?: number | undefined
  /** Stops the batch where it runs (journaled, as a durable batch's own signal). */
  readonly signal?: AbortSignal | undefined
}

/**
 * @since 0.1.0
 * @category models
 */
export interface Service {
  /** Runs (or resumes, or returns) a batch of the session and waits for its outcome, through approvals. */
  readonly runBatch: (
    sessionId: string,
    calls: ReadonlyArray<ModelToolCall>,
    options: BatchOptions
  ) => Effect.Effect<BatchResult, ToolSessionError>
  /** Like `runBatch`, but returns as soon as the batch waits for a person. */
  readonly start: (
    sessionId: string,
    calls: ReadonlyArray<ModelToolCall>,
    options: BatchOptions
  ) => Effect.Effect<BatchStatus, ToolSessionError>
  /** The session's requests waiting for a person. */
  readonly pending: (sessionId: string) => Effect.Effect<ReadonlyArray<PendingApproval>, ToolSessionError>
  /** Answers one of the session's pending requests; its batch resumes on the owner. */
  readonly answer: (sessionId: string, id: string, answer: Answer) => Effect.Effect<void, ToolSessionError>
  /** The session's records, in order. */
  readonly records: (sessionId: string) => Effect.Effect<LogContents, ToolSessionError>
  /** Stops one of the session's batches. */
  readonly stop: (sessionId: string, batchId: string, reason?: string | undefined) => Effect.Effect<void, ToolSessionError>
}

/**
 * @since 0.1.0
 * @category tags
 */
export class ToolSessions extends Context.Tag("effect-tool-runtime/ToolSessions")<ToolSessions, Service>() {}

/**
 * The client of sessions, in any process that has the cluster's `Sharding` (a runner or a
 * client-only process). `toolSet` is the tool set its messages are sent for.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerClient = (options?: { readonly toolSet?: string | undefined }): Layer.Layer<ToolSessions, never, Sharding> =>
  Layer.effect(ToolSessions, client.make(options?.toolSet))

/**
 * `runBatch` of the client in context.
 *
 * @since 0.1.0
 * @category constructors
 */
export const runBatch: (
  sessionId: string,
  calls: ReadonlyArray<ModelToolCall>,
  options: BatchOptions
) => Effect.Effect<BatchResult, ToolSessionError, ToolSessions> = Effect.fn("ToolSession.runBatch")(
  function*(sessionId: string, calls: ReadonlyArray<ModelToolCall>, options: BatchOptions) {
    return yield* (yield* ToolSessions).runBatch(sessionId, calls, options)
  }
)
