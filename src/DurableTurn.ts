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
import type { BatchResult, ModelToolCall, SchedulerError } from "./Scheduler.js"
import type { LogContents } from "./ToolCallLog.js"
import { ToolCallLog } from "./ToolCallLog.js"
import type { ToolRegistry } from "./ToolRegistry.js"
import type { ToolRuntime } from "./ToolRuntime.js"
import type {
  BatchKey,
  BatchStatus,
  DurableBatchOptions,
  LoopSteps,
  PendingApproval,
  ResumeOptions
} from "./internal/durable/contracts.js"
import { DurableApprovals, DurableTurns } from "./internal/durable/contracts.js"
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

export type {
  ApprovalsService,
  BatchKey,
  BatchStatus,
  DurableBatchOptions,
  LoopSteps,
  PendingApproval,
  ResumeOptions,
  Service
} from "./internal/durable/contracts.js"
export { DurableApprovals, DurableTurns } from "./internal/durable/contracts.js"

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
