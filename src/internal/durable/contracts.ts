/**
 * The contracts of durable turns — the services' Tags, their options and results — in a module
 * that needs no optional peer, so that a Layer module can name them in its types without making
 * its users install `@effect/workflow` (the `DurableTurn` module re-exports them).
 *
 * @internal
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { Answer } from "../../ApprovalService.js"
import type { AgentId } from "../../Execution.js"
import type { JsonValue } from "../../Json.js"
import type { BatchResult, CommitEvent, ModelToolCall, SchedulerError } from "../../Scheduler.js"
import type { LogContents } from "../../ToolCallLog.js"
import type { DurableTurnError } from "./errors.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface BatchKey {
  readonly sessionId: string
  readonly batchId: string
}

/**
 * The options of a durable batch: its key, and what an in-memory batch takes (`agent`,
 * `maxParallel`, `signal`, `onCommit`). `onCommit` is told of each commit once its result is
 * stored, in model order; a batch that runs again in the same call announces each commit once.
 *
 * @since 0.1.0
 * @category models
 */
export interface DurableBatchOptions extends BatchKey {
  readonly agent?: AgentId | undefined
  readonly maxParallel?: number | undefined
  readonly signal?: AbortSignal | undefined
  readonly onCommit?: ((event: CommitEvent) => Effect.Effect<void>) | undefined
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ResumeOptions {
  readonly signal?: AbortSignal | undefined
  readonly onCommit?: ((event: CommitEvent) => Effect.Effect<void>) | undefined
}

/**
 * A request waiting for a person: where it waits, the tool and its call card, the digest of the
 * arguments (never their values) and when it expires (epoch milliseconds).
 *
 * @since 0.1.0
 * @category models
 */
export interface PendingApproval {
  readonly id: string
  readonly sessionId: string
  readonly batchId: string
  readonly callId: string
  readonly toolName: string
  readonly agent: string
  readonly reason?: string
  readonly argumentsDigest: string
  readonly call: JsonValue
  readonly askedAt: number
  readonly expiresAt: number
}

/**
 * What {@link start} returns: the batch's outcome, or the approvals it waits for.
 *
 * @since 0.1.0
 * @category models
 */
export type BatchStatus =
  | { readonly _tag: "Complete"; readonly batch: BatchResult }
  | { readonly _tag: "Suspended"; readonly pending: ReadonlyArray<PendingApproval> }

/**
 * @since 0.1.0
 * @category models
 */
export interface Service {
  /** Runs (or resumes, or returns) the batch and waits for its outcome, through any approval waits. */
  readonly runBatch: (
    calls: ReadonlyArray<ModelToolCall>,
    options: DurableBatchOptions
  ) => Effect.Effect<BatchResult, DurableTurnError | SchedulerError>
  /** Like `runBatch`, but returns as soon as the batch waits for a person. */
  readonly start: (
    calls: ReadonlyArray<ModelToolCall>,
    options: DurableBatchOptions
  ) => Effect.Effect<BatchStatus, DurableTurnError | SchedulerError>
  /** Resumes a known batch from its journal (its calls are the ones it was started with). */
  readonly resume: (
    key: BatchKey,
    options?: ResumeOptions | undefined
  ) => Effect.Effect<BatchResult, DurableTurnError | SchedulerError>
  /** A session's records (`tool/call`, `tool/result`, approval audit, Code Mode dispatches), in order. */
  readonly records: (sessionId: string) => Effect.Effect<LogContents, DurableTurnError>
  /**
   * Stops a batch from anywhere (the caller's `signal` or interruption does the same for its own
   * batch): the stop is journaled, the bodies running where the batch runs see their signal
   * abort, and the batch ends with its stopped results; a batch waiting for an approval ends too.
   * Stopping a batch that ended changes nothing.
   */
  readonly stop: (key: BatchKey, reason?: string | undefined) => Effect.Effect<void, DurableTurnError>
}

/**
 * Reaches a batch whose lane runs in another process (the cluster provides it): asks that
 * process to abort the lane it runs for `key`. The stop itself is journaled already.
 *
 * @internal
 */
export class RemoteStop extends Context.Tag("effect-tool-runtime/DurableTurns/RemoteStop")<RemoteStop, {
  readonly stop: (key: BatchKey, executionId: string, reason: string) => Effect.Effect<void>
}>() {}

/**
 * @since 0.1.0
 * @category tags
 */
export class DurableTurns extends Context.Tag("effect-tool-runtime/DurableTurns")<DurableTurns, Service>() {}

/**
 * The person's side of durable approvals: usable from any process on the database, including a
 * client-only one that runs no batch.
 *
 * @since 0.1.0
 * @category models
 */
export interface ApprovalsService {
  /** The requests waiting for a person, oldest first. */
  readonly pending: Effect.Effect<ReadonlyArray<PendingApproval>, DurableTurnError>
  /**
   * Answers a request (an outcome, or `{ outcome, remember }`); the batch resumes on the runner's
   * next poll. A request answered already, or unknown, is refused (`Answered`, `NotFound`).
   */
  readonly answer: (id: string, answer: Answer) => Effect.Effect<void, DurableTurnError>
}

/**
 * @since 0.1.0
 * @category tags
 */
export class DurableApprovals extends Context.Tag("effect-tool-runtime/DurableApprovals")<
  DurableApprovals,
  ApprovalsService
>() {}

/**
 * A durable agent turn's store, for `AgentLoop.run({ …, durable })`: each model step recorded in
 * the journal (under the batch `<turnId>/model`), each step's calls the durable batch
 * `<turnId>/<step>`.
 *
 * @since 0.1.0
 * @category models
 */
export interface LoopSteps extends StepStore<DurableTurnError, DurableTurnError | SchedulerError> {}

/**
 * The store of an agent loop's steps: the recorded model message of a step, recording one (the
 * stored text comes back: the first recording wins), and a step's calls as a durable batch.
 *
 * @internal
 */
export interface StepStore<E, B = E> {
  readonly model: (step: number) => Effect.Effect<string | undefined, E>
  readonly recordModel: (step: number, message: string) => Effect.Effect<string, E>
  readonly runBatch: (
    step: number,
    calls: ReadonlyArray<ModelToolCall>,
    options: {
      readonly agent: string
      readonly maxParallel?: number | undefined
      readonly signal?: AbortSignal | undefined
      readonly onCommit?: ((event: CommitEvent) => Effect.Effect<void>) | undefined
    }
  ) => Effect.Effect<BatchResult, B>
}

