/**
 * The ordered concurrent scheduler of one model message's tool calls (spec §16, DECISIONS
 * D-12/D-14/D-16): classification against the live registry just before each start, groups of
 * parallel-safe calls and exclusive barriers, a rolling pool of dispatches capped by
 * `maxParallel`, and one ordered lane that runs `tool/call`, prepare, post-execute/finishing,
 * `tool/result` and commit strictly in model order.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Take from "effect/Take"
import type { UserMessage } from "./Content.js"
import type { AgentId } from "./Execution.js"
import * as internalArguments from "./internal/schema/arguments.js"
import * as internal from "./internal/scheduler/batch.js"
import * as internalInput from "./internal/scheduler/input.js"
import { ToolCallLogError } from "./ToolCallLog.js"
import type { ToolCallLog } from "./ToolCallLog.js"
import type { ToolRegistry } from "./ToolRegistry.js"
import type { ToolResult } from "./ToolResult.js"
import type { ToolRuntime } from "./ToolRuntime.js"

/**
 * One tool-call block of a complete assistant message, in model order. `arguments` is the
 * model's raw argument text (SCHED-1): `""` means `{}`, text that is not valid JSON is passed
 * on as the string itself (and then fails typed validation).
 *
 * Each field is read exactly once. A malformed entry (not an object, a field whose read throws,
 * a `callId`/`name`/`arguments` that is not a string) never reaches the runtime: it gets an
 * error result of its own, made by the scheduler, and its `tool/call` + `tool/result` pair in
 * model order. The records carry the fields that were strings and `""` for the others. The
 * error is the ERR-1 detail of the first thrown value (entry, then `callId`, `name`,
 * `arguments`), else `tool execution input needs string callId and name` (the text `execute`
 * gives the same fault), else `tool call arguments must be a string`.
 *
 * @since 0.1.0
 * @category models
 */
export interface ModelToolCall {
  readonly callId: string
  readonly name: string
  readonly arguments: string
}

/**
 * A committed result, announced as soon as it is committed (model order); the event is frozen.
 * `synthetic` marks a result the scheduler made itself, bypassing the runtime entirely (no
 * policy, no finalizer, no `tools/result`): the ABORTED_BEFORE_DISPATCH result of a call that
 * never started (SCHED-9), or the error result of a malformed {@link ModelToolCall}.
 *
 * @since 0.1.0
 * @category models
 */
export interface CommitEvent {
  readonly callId: string
  readonly index: number
  readonly result: ToolResult
  readonly synthetic: boolean
}

/**
 * One call's committed result.
 *
 * @since 0.1.0
 * @category models
 */
export interface CommittedResult {
  readonly callId: string
  readonly index: number
  readonly result: ToolResult
}

/**
 * Each option is read exactly once when the batch runs. An option that cannot be read or is
 * invalid is a defect (`Cause.IllegalArgumentException`) raised before anything is logged or run.
 *
 * @since 0.1.0
 * @category models
 */
export interface BatchOptions {
  /** The step's initiating agent (a string): classification, execution and `tool/call` records use it. */
  readonly agent?: AgentId | undefined
  /** The pool cap (SCHED-4): a positive integer, default `10`; `1` runs fully serially. */
  readonly maxParallel?: number | undefined
  /**
   * The step's abort signal (caller cancellation, together with interruption, D-14). It must be
   * a genuine `AbortSignal` of this realm (not a look-alike, not a Proxy).
   */
  readonly signal?: AbortSignal | undefined
  /** The `batchId` of the durable records (a string); defaults to the first call's id. */
  readonly batchId?: string | undefined
  /**
   * Called on the ordered lane right after each commit (after the `tool/result` append), in
   * model order. It holds the lane while it runs. A failure or defect (of any value), a
   * synchronous throw or a return value that is not an Effect is logged as a warning with a safe
   * description (ERR-1 detail) and ignored.
   */
  readonly onCommit?: ((event: CommitEvent) => Effect.Effect<void>) | undefined
}

/**
 * The outcome of a batch: exactly one result per call, in model order.
 *
 * @since 0.1.0
 * @category models
 */
export interface BatchResult {
  readonly results: ReadonlyArray<CommittedResult>
  /**
   * The next-step inbox (CTX-4): every committed result's `additionalContexts`, in model
   * order, to be delivered after all of this batch's results.
   */
  readonly contexts: ReadonlyArray<UserMessage>
  /** SCHED-11: some committed success carried `concludesTurn: true`. */
  readonly concluded: boolean
  /** The batch was cancelled (caller signal or interruption) before it finished. */
  readonly aborted: boolean
}

/**
 * What {@link runBatchStream} emits: each commit as it happens, then the batch outcome.
 *
 * @since 0.1.0
 * @category models
 */
export type BatchEvent =
  | { readonly _tag: "Committed"; readonly commit: CommitEvent }
  | { readonly _tag: "Completed"; readonly batch: BatchResult }

/**
 * The durable log failed (D-16, SCHED-10). The scheduler recorded the first failure, started
 * nothing more, awaited every in-flight dispatch and fabricated no result. `unrecorded` lists,
 * in model order, every call without a durable `tool/result`; `notStarted` is the subset that
 * never started (no `tool/call` attempted, no prepare).
 *
 * Message: `tool-call log failed: <log message>; no tool/result recorded for: <ids>` followed by
 * ` (not started: <ids>)` when some calls never started.
 *
 * @since 0.1.0
 * @category errors
 */
export class SchedulerError extends Schema.TaggedError<SchedulerError>("effect-tool-runtime/SchedulerError")(
  "SchedulerError",
  {
    batchId: Schema.String,
    logError: ToolCallLogError,
    unrecorded: Schema.Array(Schema.String),
    notStarted: Schema.Array(Schema.String)
  }
) {
  override get message(): string {
    const base = `tool-call log failed: ${this.logError.message}; no tool/result recorded for: ${
      this.unrecorded.join(", ")
    }`
    return this.notStarted.length === 0 ? base : `${base} (not started: ${this.notStarted.join(", ")})`
  }
}

/**
 * The default pool cap (SCHED-4).
 *
 * @since 0.1.0
 * @category constants
 */
export const DEFAULT_MAX_PARALLEL: number = internalInput.DEFAULT_MAX_PARALLEL

/**
 * The message of the defect raised for an invalid `maxParallel` (SCHED-4).
 *
 * @since 0.1.0
 * @category constants
 */
export const MAX_PARALLEL_MESSAGE: string = internalInput.MAX_PARALLEL_MESSAGE

/**
 * True for a valid pool cap: a positive integer (SCHED-4). Check configuration at load time.
 *
 * @since 0.1.0
 * @category guards
 */
export const isValidMaxParallel: (value: unknown) => value is number = internalInput.isValidMaxParallel

/**
 * SCHED-1: the arguments the runtime receives for a raw model argument string — `""` → `{}`,
 * valid JSON → the parsed value, anything else → the string itself. Never throws.
 *
 * @since 0.1.0
 * @category constructors
 */
export const parseArguments: (raw: string) => unknown = internalArguments.parseArguments

const fromFailure = (failure: internal.LogFailure): SchedulerError => new SchedulerError(failure)

/**
 * Runs one complete assistant message's tool calls (spec §16) through the staged runtime.
 *
 * **Details**
 *
 * - Each call is classified against the live registry immediately before it starts (SCHED-2,
 *   SCHED-6, D-12). Consecutive parallel-safe calls form a group; an exclusive call is a group of
 *   one that runs with nothing else in flight and holds its barrier through its commit.
 * - At most `maxParallel` dispatches (around-wrappers + body) are in flight; a new call starts
 *   as soon as one settles. Everything else — `tool/call`, prepare, post-execute/finishing,
 *   `tool/result`, contexts, `onCommit` — runs on one ordered lane in model order, and results
 *   are committed as the longest ready prefix.
 * - Cancellation (the `signal` aborting, or interruption of the calling fiber) stops new starts,
 *   drains every started dispatch (they observe the aborted signal; none is abandoned), commits
 *   them in order, then gives each never-started call a `tool/call` + synthetic
 *   ABORTED_BEFORE_DISPATCH `tool/result` pair that bypasses the runtime. When interrupted,
 *   the drain runs uninterruptibly and the interruption completes afterwards.
 * - A durable-log failure fails the batch with {@link SchedulerError} after draining (D-16). A
 *   defect of a staged step (the runtime's own: its steps never fail) is handled the same way:
 *   nothing more starts — no classification, `tool/call`, prepare or dispatch after it is seen —
 *   every started dispatch is awaited, then `runBatch` dies with the first defect (SCHED-10).
 * - A malformed call gets its own error result (see {@link ModelToolCall}); it never kills the batch.
 * - Invalid input is a defect (`IllegalArgumentException`) raised before anything is logged or
 *   run: `maxParallelToolCalls must be a positive integer`, `runBatch needs an array of tool calls`,
 *   `runBatch could not read the tool-call array: <detail>`, `runBatch options must be an object`,
 *   `runBatch could not read option "<key>": <detail>`, `runBatch option "<key>" must be …`.
 *
 * @example
 * ```ts
 * const batch = yield* Scheduler.runBatch(
 *   [{ callId: "c1", name: "read", arguments: "{\"path\":\"a\"}" }, { callId: "c2", name: "write", arguments: "" }],
 *   { agent: "main", maxParallel: 4, signal }
 * )
 * batch.results.map((r) => r.result) // model order
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const runBatch: (
  calls: ReadonlyArray<ModelToolCall>,
  options?: BatchOptions | undefined
) => Effect.Effect<BatchResult, SchedulerError, ToolRuntime | ToolRegistry | ToolCallLog> = Effect.fn(
  "Scheduler.runBatch"
)(function*(calls: ReadonlyArray<ModelToolCall>, options?: BatchOptions | undefined) {
  return yield* Effect.mapError(internal.runBatch(calls, options), fromFailure)
})

/**
 * {@link runBatch} as a stream for UIs: a `Committed` event per commit as soon as it happens
 * (model order), then one `Completed` event with the batch outcome. The stream fails with
 * {@link SchedulerError} like `runBatch`. Ending the stream early interrupts the batch, which
 * then drains and records synthetic results as on cancellation.
 *
 * @since 0.1.0
 * @category constructors
 */
export const runBatchStream = (
  calls: ReadonlyArray<ModelToolCall>,
  options?: BatchOptions | undefined
): Stream.Stream<BatchEvent, SchedulerError, ToolRuntime | ToolRegistry | ToolCallLog> =>
  Stream.unwrapScoped(Effect.gen(function*() {
    const queue = yield* Queue.unbounded<Take.Take<BatchEvent, SchedulerError>>()
    const tap = (commit: CommitEvent): Effect.Effect<void> =>
      Queue.offer(queue, Take.of<BatchEvent>({ _tag: "Committed", commit }))
    yield* internal.runBatch(calls, options, undefined, tap).pipe(
      Effect.mapError(fromFailure),
      Effect.matchCauseEffect({
        onSuccess: (batch) => Queue.offerAll(queue, [Take.of<BatchEvent>({ _tag: "Completed", batch }), Take.end]),
        onFailure: (cause) => Queue.offer(queue, Take.failCause(cause))
      }),
      Effect.forkScoped
    )
    return Stream.flattenTake(Stream.fromQueue(queue))
  }))
