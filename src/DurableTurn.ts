/**
 * Durable turns (DECISIONS D-22, D-24): a model message's tool calls as a batch that survives
 * crashes and restarts, on `@effect/workflow` over `@effect/cluster`.
 *
 * **What is durable.** A durable batch is a workflow keyed by `sessionId` + `batchId`. Running a
 * key again resumes it and returns the same results; running a completed key returns its recorded
 * results and runs nothing. Each call's gate decision, its body's intent (stored before the body
 * starts) and settle, and its finished result are journaled once, with group commit, in the same
 * database as the engine's own storage. A resumed batch never asks a policy or a person again for
 * a call already decided, and never runs a settled body again. A body cut while running follows
 * its tool's `replay` declaration (`never` → an `OUTCOME_UNKNOWN` error result; `idempotent` and
 * `safe` → run again, with the same `ctx.idempotencyKey`).
 *
 * **Approvals.** An `ask` inside a durable batch waits for a person across restarts: the request
 * is stored (list it with {@link pending}), the batch suspends, and an {@link answer} from any
 * process on the same database resumes it. Unanswered requests expire (`unavailable`).
 *
 * **Stop.** The caller's interruption or `signal` stops the batch exactly as in memory (running
 * bodies are aborted and awaited, calls that never started end `ABORTED_BEFORE_DISPATCH`), and
 * the stop is journaled: resuming a stopped batch returns its stopped results and runs nothing.
 *
 * This module needs the optional peers `@effect/workflow` and `@effect/cluster`; it is on its own
 * subpath (`effect-tool-runtime/DurableTurn`), not in the barrel. The engine and journal Layers
 * are in `effect-tool-runtime/layers/DurableTurnSql`.
 *
 * @since 0.1.0
 */
import type { WorkflowEngine } from "@effect/workflow/WorkflowEngine"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { ApprovalService } from "./ApprovalService.js"
import type { Answer } from "./ApprovalService.js"
import type { AgentId } from "./Execution.js"
import type { JsonValue } from "./Json.js"
import type { BatchResult, CommitEvent, ModelToolCall, SchedulerError } from "./Scheduler.js"
import type { LogContents } from "./ToolCallLog.js"
import { ToolCallLog } from "./ToolCallLog.js"
import type { ToolRegistry } from "./ToolRegistry.js"
import type { ToolRuntime } from "./ToolRuntime.js"
import * as errors from "./internal/durable/errors.js"
import * as journal from "./internal/durable/journal.js"
import * as durableLog from "./internal/durable/log.js"
import * as internal from "./internal/durable/service.js"

/**
 * Why a durable turn operation failed: an option or key that cannot be used (`InvalidOption`), a
 * batch that does not exist (`NotFound`), a key run again with other calls (`Mismatch`), the
 * journal's storage (`Storage`), or an answer that cannot be taken (`Answered`, `InvalidAnswer`).
 *
 * @since 0.1.0
 * @category errors
 */
export const DurableTurnError = errors.DurableTurnError

/**
 * @since 0.1.0
 * @category errors
 */
export type DurableTurnError = errors.DurableTurnError

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
}

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
 * The journal's storage seam (the SQL Layers are in `layers/DurableTurnSql`).
 *
 * @since 0.1.0
 * @category tags
 */
export const DurableJournal = journal.DurableJournal

/**
 * @since 0.1.0
 * @category models
 */
export type DurableJournal = journal.DurableJournal

/**
 * @since 0.1.0
 * @category errors
 */
export const DurableJournalError = journal.DurableJournalError

/**
 * @since 0.1.0
 * @category errors
 */
export type DurableJournalError = journal.DurableJournalError

/**
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /**
   * How often a waiting caller re-reads a suspended batch's status, at most (the engine's own
   * retry schedule). Default `"1 second"`; the runner's storage poll is set by the engine Layer.
   */
  readonly pollInterval?: Duration.DurationInput | undefined
  /** How long a durable approval waits for a person before it decides `unavailable`. Default `"1 day"`. */
  readonly approvalTimeout?: Duration.DurationInput | undefined
}

/**
 * The service: registers the durable batch workflow with the engine in context, and (when an
 * `ApprovalService` is provided) the durable answerer that makes its `ask`s wait across restarts.
 * Needs this library's `ToolRuntime` built over an `Approval` that is the `ApprovalService`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options?: Options | undefined
): Layer.Layer<
  DurableTurns | DurableApprovals,
  never,
  WorkflowEngine | DurableJournal | ToolRuntime | ToolRegistry | ToolCallLog | ApprovalService
> =>
  Layer.scopedContext(
    Effect.map(internal.make(options), ({ approvals, turns }) =>
      Context.make(DurableTurns, turns).pipe(Context.add(DurableApprovals, approvals)))
  )

/**
 * The person's side alone, for a client-only process (answers and listings; no batch runs there).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerApprovals: Layer.Layer<DurableApprovals, never, WorkflowEngine | DurableJournal> = Layer.effect(
  DurableApprovals,
  internal.makeApprovals
)

/**
 * The tool call log of durable turns: the journal read and written as `ToolCallLog` records. Give
 * it to the `ApprovalService` and Code Mode so that their audit records are written once per
 * batch however often it runs.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerLog: Layer.Layer<ToolCallLog, never, DurableJournal> = Layer.effect(
  ToolCallLog,
  Effect.map(journal.DurableJournal, durableLog.make)
)

/**
 * A journal in memory (nothing survives the process): for tests, with the in-memory engine.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerJournalMemory: Layer.Layer<DurableJournal> = Layer.sync(journal.DurableJournal, journal.memory)

/**
 * A durable agent turn's store, for `AgentLoop.run({ …, durable })`: each model step recorded in
 * the journal (under the batch `<turnId>/model`), each step's calls the durable batch
 * `<turnId>/<step>`.
 *
 * @since 0.1.0
 * @category models
 */
export interface LoopSteps {
  readonly model: (step: number) => Effect.Effect<string | undefined, DurableTurnError>
  readonly recordModel: (step: number, message: string) => Effect.Effect<string, DurableTurnError>
  readonly runBatch: (
    step: number,
    calls: ReadonlyArray<ModelToolCall>,
    options: {
      readonly agent: string
      readonly maxParallel?: number | undefined
      readonly signal?: AbortSignal | undefined
      readonly onCommit?: ((event: CommitEvent) => Effect.Effect<void>) | undefined
    }
  ) => Effect.Effect<BatchResult, DurableTurnError | SchedulerError>
}

/**
 * The store that makes an agent loop durable (`AgentLoop.run({ agent, prompt, durable })`): run the
 * same `turnId` again after a crash and the steps already answered are replayed without asking the
 * model, the batch that was running resumes, and the loop goes on.
 *
 * @since 0.1.0
 * @category constructors
 */
export const loopSteps = (
  options: { readonly sessionId: string; readonly turnId: string }
): Effect.Effect<LoopSteps, DurableTurnError, DurableTurns | DurableJournal> => internal.loopSteps(options)

/**
 * {@link Service.runBatch} of the service in context.
 *
 * @since 0.1.0
 * @category constructors
 */
export const runBatch: (
  calls: ReadonlyArray<ModelToolCall>,
  options: DurableBatchOptions
) => Effect.Effect<BatchResult, DurableTurnError | SchedulerError, DurableTurns> = Effect.fn("DurableTurn.runBatch")(
  function*(calls: ReadonlyArray<ModelToolCall>, options: DurableBatchOptions) {
    return yield* (yield* DurableTurns).runBatch(calls, options)
  }
)

/**
 * {@link Service.start} of the service in context.
 *
 * @since 0.1.0
 * @category constructors
 */
export const start: (
  calls: ReadonlyArray<ModelToolCall>,
  options: DurableBatchOptions
) => Effect.Effect<BatchStatus, DurableTurnError | SchedulerError, DurableTurns> = Effect.fn("DurableTurn.start")(
  function*(calls: ReadonlyArray<ModelToolCall>, options: DurableBatchOptions) {
    return yield* (yield* DurableTurns).start(calls, options)
  }
)

/**
 * {@link Service.resume} of the service in context.
 *
 * @since 0.1.0
 * @category constructors
 */
export const resume: (
  key: BatchKey,
  options?: ResumeOptions | undefined
) => Effect.Effect<BatchResult, DurableTurnError | SchedulerError, DurableTurns> = Effect.fn("DurableTurn.resume")(
  function*(key: BatchKey, options?: ResumeOptions | undefined) {
    return yield* (yield* DurableTurns).resume(key, options)
  }
)

/**
 * {@link Service.records} of the service in context.
 *
 * @since 0.1.0
 * @category constructors
 */
export const records = (sessionId: string): Effect.Effect<LogContents, DurableTurnError, DurableTurns> =>
  Effect.flatMap(DurableTurns, (service) => service.records(sessionId))

/**
 * The pending approvals, from the service in context.
 *
 * @since 0.1.0
 * @category constructors
 */
export const pending: Effect.Effect<ReadonlyArray<PendingApproval>, DurableTurnError, DurableApprovals> = Effect
  .flatMap(DurableApprovals, (service) => service.pending)

/**
 * Answers a pending approval, through the service in context.
 *
 * @since 0.1.0
 * @category constructors
 */
export const answer: (id: string, answer: Answer) => Effect.Effect<void, DurableTurnError, DurableApprovals> = Effect
  .fn("DurableTurn.answer")(function*(id: string, given: Answer) {
    return yield* (yield* DurableApprovals).answer(id, given)
  })
