/**
 * Observability of tool calls: the seam the runtime and the scheduler report through (one probe
 * per call, one wrapper per stage, one per batch), and the Layer that turns it into OpenTelemetry
 * GenAI spans and `effect/Metric` metrics. Without a `ToolTelemetry` in context the runtime makes
 * no probe at all, so an uninstrumented call pays nothing.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Metric from "effect/Metric"
import type { AgentId } from "./Execution.js"
import * as internal from "./internal/telemetry/spans.js"
import * as metrics from "./internal/telemetry/metrics.js"
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
 * What the runtime may add when it ends a call. `denied` is whether a policy refused the call
 * (a pre-execute deny, an approval that was not granted, a guard); when the runtime does not say,
 * the telemetry infers it from the stages that ran.
 *
 * @since 0.1.0
 * @category models
 */
export interface CallEnd {
  readonly denied?: boolean | undefined
}

/**
 * One observed call. `stage` wraps a stage's work (it may fail or be interrupted; the probe ends
 * the stage either way); `end` is called exactly once, with the call's final result, after its
 * observers ran. A probe must not fail or throw (the runtime does not guard it), and it should
 * not suspend: a hook-less call runs its stages on the calling fiber, where a probe that waits
 * delays the caller's abort until it resumes.
 *
 * @since 0.1.0
 * @category models
 */
export interface CallProbe {
  readonly stage: <A, E, R>(stage: Stage, effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  readonly end: (result: ToolResult, facts?: CallEnd) => Effect.Effect<void>
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

/**
 * What {@link layer} records. Every field defaults to on.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /**
   * Spans (default `true`): recorded when a tracer is installed (for instance
   * `@effect/opentelemetry`'s `NodeSdk.layer`); Effect's built-in tracer, which exports nothing,
   * gets none unless this is `"always"`. `false` records no span.
   */
  readonly spans?: boolean | "always" | undefined
  /** The child span of each stage under a call's span (default `true`). */
  readonly stageSpans?: boolean | undefined
  /** The `effect/Metric` instruments (default `true`). */
  readonly metrics?: boolean | undefined
}

const illegal = (message: string) => Effect.die(new Cause.IllegalArgumentException(message))

const readOptions = (options: unknown): Effect.Effect<internal.Config> =>
  Effect.suspend(() => {
    if (options === undefined) return Effect.succeed({ spans: true, stageSpans: true, metrics: true })
    if (typeof options !== "object" || options === null) return illegal("ToolTelemetry options must be an object")
    const read: Record<string, unknown> = {}
    for (const key of ["spans", "stageSpans", "metrics"] as const) {
      try {
        read[key] = (options as Record<string, unknown>)[key]
      } catch {
        return illegal(`ToolTelemetry could not read option "${key}"`)
      }
    }
    const { metrics, spans, stageSpans } = read
    if (spans !== undefined && typeof spans !== "boolean" && spans !== "always") {
      return illegal(`ToolTelemetry option "spans" must be a boolean or "always"`)
    }
    if (stageSpans !== undefined && typeof stageSpans !== "boolean") {
      return illegal(`ToolTelemetry option "stageSpans" must be a boolean`)
    }
    if (metrics !== undefined && typeof metrics !== "boolean") {
      return illegal(`ToolTelemetry option "metrics" must be a boolean`)
    }
    return Effect.succeed({
      spans: spans === undefined ? true : spans as boolean | "always",
      stageSpans: stageSpans !== false,
      metrics: metrics !== false
    })
  })

/**
 * The OpenTelemetry GenAI telemetry service: a span `execute_tool <name>` per call with a child
 * span per stage that ran, a `tool_batch` span per scheduler batch, and the metrics below. Spans
 * go through Effect's tracing API, so whatever tracer the application installed receives them.
 * Dies with `IllegalArgumentException` on malformed options.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options?: Options | undefined): Effect.Effect<Service> =>
  Effect.map(readOptions(options), internal.make)

/**
 * {@link make} as a Layer. Provide it below `ToolRuntime.layer` (the runtime captures it when it
 * is built) and in the environment of `Scheduler.runBatch`.
 *
 * @example
 * ```ts
 * const runtime = ToolRuntime.layer.pipe(Layer.provideMerge(ToolTelemetry.layer()))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options?: Options | undefined): Layer.Layer<ToolTelemetry> =>
  Layer.effect(ToolTelemetry, make(options))

/**
 * The span attribute keys (OpenTelemetry GenAI keys first, then this library's own).
 *
 * @since 0.1.0
 * @category constants
 */
export const Attributes: typeof internal.Attributes = internal.Attributes

/**
 * The span name of each stage.
 *
 * @since 0.1.0
 * @category constants
 */
export const stageSpanNames: { readonly [S in Stage]: string } = internal.stageSpanNames

/**
 * The name of a scheduler batch's span.
 *
 * @since 0.1.0
 * @category constants
 */
export const BATCH_SPAN_NAME: string = internal.BATCH_SPAN

/**
 * The span name of a call of `toolName`: `execute_tool <toolName>`.
 *
 * @since 0.1.0
 * @category constants
 */
export const callSpanName = (toolName: string): string => `${internal.OPERATION} ${toolName}`

/**
 * The outcome label of a success; an error result's label is its `error.info.code`, or
 * {@link OUTCOME_DENIED} / {@link OUTCOME_ERROR} when it has none.
 *
 * @since 0.1.0
 * @category constants
 */
export const OUTCOME_OK: string = internal.OK

/**
 * The outcome label of a denial that carries no code.
 *
 * @since 0.1.0
 * @category constants
 */
export const OUTCOME_DENIED: string = internal.DENIED

/**
 * The outcome label of any other error result that carries no code.
 *
 * @since 0.1.0
 * @category constants
 */
export const OUTCOME_ERROR: string = internal.ERROR

/**
 * The tool label of calls whose tool was unknown (`UNKNOWN_TOOL`), so model-invented names do
 * not create new metric series.
 *
 * @since 0.1.0
 * @category constants
 */
export const OTHER_TOOL: string = metrics.OTHER_TOOL

/**
 * `tool_runtime.calls` (`{call}`): calls by `gen_ai.tool.name` and `tool_runtime.outcome`.
 *
 * @since 0.1.0
 * @category constants
 */
export const calls: Metric.Metric.Counter<number> = metrics.calls

/**
 * `tool_runtime.call.duration` (`s`): call duration histogram by `gen_ai.tool.name`, from the
 * call's creation to its result (the queue wait excluded).
 *
 * @since 0.1.0
 * @category constants
 */
export const callDuration: Metric.Metric.Histogram<number> = metrics.callDuration

/**
 * `tool_runtime.calls.active` (`{call}`): calls in flight (created, result not yet delivered).
 *
 * @since 0.1.0
 * @category constants
 */
export const activeCalls: Metric.Metric.Gauge<number> = metrics.activeCalls

/**
 * `tool_runtime.denials` (`{call}`): calls a policy refused, by `gen_ai.tool.name` and
 * `tool_runtime.outcome`.
 *
 * @since 0.1.0
 * @category constants
 */
export const denials: Metric.Metric.Counter<number> = metrics.denials

/**
 * `tool_runtime.timeouts` (`{call}`): `TOOL_TIMEOUT` results by `gen_ai.tool.name`.
 *
 * @since 0.1.0
 * @category constants
 */
export const timeouts: Metric.Metric.Counter<number> = metrics.timeouts

/**
 * `tool_runtime.approval.duration` (`s`): time spent waiting for the approval service, by
 * `gen_ai.tool.name`.
 *
 * @since 0.1.0
 * @category constants
 */
export const approvalWait: Metric.Metric.Histogram<number> = metrics.approvalWait

/**
 * One tool's series of a metric keyed by tool only (`callDuration`, `timeouts`, `approvalWait`),
 * for `Metric.value`.
 *
 * @since 0.1.0
 * @category getters
 */
export const forTool: <T, In, Out>(metric: Metric.Metric<T, In, Out>, toolName: string) => Metric.Metric<T, In, Out> =
  metrics.forTool

/**
 * One (tool, outcome) series of `calls` or `denials`, for `Metric.value`.
 *
 * @since 0.1.0
 * @category getters
 */
export const forToolAndOutcome: <T, In, Out>(
  metric: Metric.Metric<T, In, Out>,
  toolName: string,
  outcome: string
) => Metric.Metric<T, In, Out> = metrics.forToolAndOutcome
