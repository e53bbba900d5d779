/**
 * Observability of tool calls: the seam the runtime and the scheduler report through (one probe
 * per call, one wrapper per stage, one per batch), and the Layer that turns it into OpenTelemetry
 * GenAI spans and `effect/Metric` metrics. Without a `ToolTelemetry` in context the runtime makes
 * no probe at all, so an uninstrumented call pays nothing.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { AgentId } from "./Execution.js"
import type { ToolResult } from "./ToolResult.js"

/**
 * The stages of one call, in pipeline order. `queue` is the wait behind a barrier or a full pool
 * in the scheduler, before the call's `prepare` starts; `approval` is the wait for the
 * `Approval` service; `body` is the tool's own body inside the around-dispatch wrappers.
 *
 * @since 0.1.0
 * @category models
 */
export type Stage = "queue" | "pre-execute" | "approval" | "guards" | "body" | "post-execute" | "finish"

/**
 * What the runtime knows of a call when it starts observing it: the identity fields that
 * creation validated (`""` when the input had none).
 *
 * @since 0.1.0
 * @category models
 */
export interface CallInfo {
  readonly toolName: string
  readonly callId: string
  readonly agent?: AgentId | undefined
  /** The clock time (`Clock.currentTimeNanos`) the call entered a scheduler's queue, when it did. */
  readonly queuedAt?: bigint | undefined
}

/**
 * One observed call. `stage` wraps a stage's work (it may fail or be interrupted; the probe ends
 * the stage either way); `end` is called exactly once, with the call's final result, after its
 * observers ran. A probe must not fail or throw: the runtime does not guard it.
 *
 * @since 0.1.0
 * @category models
 */
export interface CallProbe {
  readonly stage: <A, E, R>(stage: Stage, effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  readonly end: (result: ToolResult) => Effect.Effect<void>
}

/**
 * What one scheduler batch reports when it starts.
 *
 * @since 0.1.0
 * @category models
 */
export interface BatchInfo {
  readonly batchId: string
  readonly size: number
  readonly agent?: AgentId | undefined
}

/**
 * The telemetry service. `call` runs on the fiber that creates the call (so a span it opens is a
 * child of the caller's current span); `batch` wraps a whole `runBatch`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service {
  readonly call: (info: CallInfo) => Effect.Effect<CallProbe>
  readonly batch: <A, E, R>(info: BatchInfo, effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

/**
 * Provide it to `ToolRuntime.layer` (and to `Scheduler.runBatch`'s environment) to observe calls.
 *
 * @since 0.1.0
 * @category tags
 */
export class ToolTelemetry extends Context.Tag("effect-tool-runtime/ToolTelemetry")<ToolTelemetry, Service>() {}
