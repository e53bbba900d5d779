/**
 * The `ToolTelemetry` service: a span per call (OpenTelemetry GenAI `execute_tool`), a child span
 * per stage, a span per batch, and the `effect/Metric` instruments of `telemetryMetrics.ts`.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as DefaultServices from "effect/DefaultServices"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import * as Tracer from "effect/Tracer"
import { Codes } from "../../ToolError.js"
import type { ToolResult } from "../../ToolResult.js"
import type * as ToolTelemetry from "../../ToolTelemetry.js"
import * as M from "./metrics.js"

/** @internal */
export const Attributes = {
  operationName: "gen_ai.operation.name",
  toolName: "gen_ai.tool.name",
  callId: "gen_ai.tool.call.id",
  agentId: "gen_ai.agent.id",
  outcome: "tool_runtime.outcome",
  denied: "tool_runtime.denied",
  errorType: "error.type",
  batchId: "tool_runtime.batch.id",
  batchSize: "tool_runtime.batch.size"
} as const

/** @internal */
export const OPERATION = "execute_tool"
/** @internal */
export const BATCH_SPAN = "tool_batch"
/** @internal */
export const OK = "ok"
/** @internal */
export const DENIED = "denied"
/** @internal */
export const ERROR = "error"
/** @internal */
export const OTHER_ERROR_TYPE = "_OTHER"

/** @internal */
export const stageSpanNames: { readonly [S in ToolTelemetry.Stage]: string } = {
  queue: "tool.queue",
  "pre-execute": "tool.pre_execute",
  approval: "tool.approval",
  guards: "tool.guards",
  body: "tool.body",
  "post-execute": "tool.post_execute",
  finish: "tool.finish"
}

/** @internal */
export interface Config {
  readonly spans: boolean | "always"
  readonly stageSpans: boolean
  readonly metrics: boolean
}

const builtInTracer = Context.get(DefaultServices.liveServices, Tracer.Tracer)

const pipelineCodes: ReadonlySet<string> = new Set(Object.values(Codes))

const clockOf = (fiber: Fiber.RuntimeFiber<unknown, unknown>): Clock.Clock =>
  Context.get(fiber.currentDefaultServices, Clock.Clock)

const parentOf = (fiber: Fiber.RuntimeFiber<unknown, unknown>): Option.Option<Tracer.AnySpan> => {
  let span = Context.getOption(fiber.currentContext, Tracer.ParentSpan)
  while (Option.isSome(span) && Context.get(span.value.context, Tracer.DisablePropagation)) {
    const value: Tracer.AnySpan = span.value
    span = value._tag === "Span" ? value.parent : Option.none()
  }
  return span
}

const tracingOn = (config: Config, fiber: Fiber.RuntimeFiber<unknown, unknown>): boolean => {
  if (config.spans === false || !fiber.getFiberRef(FiberRef.currentTracerEnabled)) return false
  return config.spans === "always" || fiber.currentTracer !== builtInTracer
}

/** A span started at `startTime` (the tracer's clock when timing is on) under the current parent. */
const openSpan = (
  fiber: Fiber.RuntimeFiber<unknown, unknown>,
  name: string,
  parent: Option.Option<Tracer.AnySpan>,
  startTime: bigint,
  attributes: ReadonlyArray<readonly [string, unknown]>
): Tracer.Span => {
  const span = fiber.currentTracer.span(name, parent, Context.empty(), [], startTime, "internal")
  const annotations = fiber.getFiberRef(FiberRef.currentTracerSpanAnnotations)
  for (const [key, value] of annotations) span.attribute(key, value)
  for (const [key, value] of attributes) span.attribute(key, value)
  return span
}

interface Outcome {
  readonly isError: boolean
  readonly code: string | undefined
}

const SUCCESS: Outcome = { isError: false, code: undefined }
const UNCODED: Outcome = { isError: true, code: undefined }

/** The outcome of a result, each field read once; anything unreadable is an uncoded error. */
const outcomeOf = (result: unknown): Outcome => {
  if (typeof result !== "object" || result === null) return UNCODED
  try {
    const r = result as { readonly isError?: unknown; readonly error?: unknown }
    const isError = r.isError
    if (isError === false) return SUCCESS
    const error = r.error
    if (typeof error !== "object" || error === null) return UNCODED
    const info = (error as { readonly info?: unknown }).info
    if (typeof info !== "object" || info === null) return UNCODED
    const code = (info as { readonly code?: unknown }).code
    return typeof code === "string" ? { isError: true, code } : UNCODED
  } catch {
    return UNCODED
  }
}

const isPolicyStage = (stage: ToolTelemetry.Stage): boolean =>
  stage === "pre-execute" || stage === "approval" || stage === "guards"

const seconds = (from: bigint, to: bigint): number => Number(to - from) / 1e9

class Probe implements ToolTelemetry.CallProbe {
  bodyRan = false
  policyPassed = false
  ended = false
  readonly stageOptions: Tracer.SpanOptions | undefined
  constructor(
    readonly config: Config,
    readonly span: Tracer.Span | undefined,
    readonly tool: string,
    readonly startedAt: bigint,
    readonly timing: boolean
  ) {
    this.stageOptions = span === undefined || !config.stageSpans
      ? undefined
      : { parent: span, kind: "internal", captureStackTrace: false }
  }

  stage<A, E, R>(stage: ToolTelemetry.Stage, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> {
    const observed = this.track(stage, effect)
    const options = this.stageOptions
    return options === undefined ? observed : Effect.withSpan(observed, stageSpanNames[stage], options)
  }

  private track<A, E, R>(stage: ToolTelemetry.Stage, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> {
    if (stage === "body") {
      return Effect.suspend(() => {
        this.bodyRan = true
        return effect
      })
    }
    if (stage === "approval" && this.config.metrics) {
      return Effect.withFiberRuntime((fiber) => {
        const clock = clockOf(fiber)
        const start = clock.unsafeCurrentTimeNanos()
        return Effect.onExit(effect, (exit) =>
          Effect.sync(() => {
            this.passed(exit)
            const wait = seconds(start, clock.unsafeCurrentTimeNanos())
            M.recordApprovalWait(this.tool, wait, fiber.getFiberRef(FiberRef.currentMetricLabels))
          }))
      })
    }
    if (isPolicyStage(stage)) {
      return Effect.map(effect, (value) => {
        this.policyPassed = true
        return value
      })
    }
    return effect
  }

  private passed(exit: Exit.Exit<unknown, unknown>): void {
    if (Exit.isSuccess(exit)) this.policyPassed = true
  }

  /** Unknown names are bucketed so a model cannot grow the metric registry without bound. */
  private metricTool(code: string | undefined): string {
    return code === Codes.UNKNOWN_TOOL ? M.OTHER_TOOL : this.tool
  }

  private isDenial(outcome: Outcome, facts: ToolTelemetry.CallEnd | undefined): boolean {
    if (!outcome.isError) return false
    if (facts !== undefined && typeof facts.denied === "boolean") return facts.denied
    if (this.bodyRan || !this.policyPassed) return false
    return outcome.code === undefined || !pipelineCodes.has(outcome.code)
  }

  end(result: ToolResult, facts?: ToolTelemetry.CallEnd): Effect.Effect<void> {
    return Effect.withFiberRuntime((fiber) => {
      if (this.ended) return Effect.void
      this.ended = true
      const now = clockOf(fiber).unsafeCurrentTimeNanos()
      const outcome = outcomeOf(result)
      const denied = this.isDenial(outcome, facts)
      const label = !outcome.isError ? OK : outcome.code ?? (denied ? DENIED : ERROR)
      const span = this.span
      if (span !== undefined) {
        span.attribute(Attributes.outcome, label)
        if (outcome.isError) span.attribute(Attributes.errorType, outcome.code ?? OTHER_ERROR_TYPE)
        if (denied) span.attribute(Attributes.denied, true)
        span.end(this.timing ? now : BigInt(0), outcome.isError ? Exit.fail(label) : Exit.void)
      }
      if (this.config.metrics) {
        M.recordEnd({
          tool: this.metricTool(outcome.code),
          outcome: label,
          seconds: seconds(this.startedAt, now),
          denied,
          timedOut: outcome.code === Codes.TOOL_TIMEOUT
        }, fiber.getFiberRef(FiberRef.currentMetricLabels))
      }
      return Effect.void
    })
  }
}

const NOOP_PROBE: Effect.Effect<ToolTelemetry.CallProbe> = Effect.succeed({
  stage: (_stage, effect) => effect,
  end: () => Effect.void
})

const NO_ATTRIBUTES: ReadonlyArray<readonly [string, unknown]> = []

const callAttributes = (info: ToolTelemetry.CallInfo): ReadonlyArray<readonly [string, unknown]> => {
  const attributes: Array<readonly [string, unknown]> = [
    [Attributes.operationName, OPERATION],
    [Attributes.toolName, info.toolName],
    [Attributes.callId, info.callId]
  ]
  if (info.agent !== undefined) attributes.push([Attributes.agentId, info.agent])
  return attributes
}

/** @internal */
export const make = (config: Config): ToolTelemetry.Service => ({
  call: (info) =>
    Effect.withFiberRuntime((fiber) => {
      const toolName = info.toolName
      const queuedAt = info.queuedAt
      const timing = fiber.getFiberRef(FiberRef.currentTracerTimingEnabled)
      const now = clockOf(fiber).unsafeCurrentTimeNanos()
      let span: Tracer.Span | undefined = undefined
      if (tracingOn(config, fiber)) {
        const startTime = timing ? queuedAt ?? now : BigInt(0)
        span = openSpan(fiber, `${OPERATION} ${toolName}`, parentOf(fiber), startTime, callAttributes(info))
        if (queuedAt !== undefined && config.stageSpans) {
          openSpan(fiber, stageSpanNames.queue, Option.some(span), startTime, NO_ATTRIBUTES)
            .end(timing ? now : BigInt(0), Exit.void)
        }
      }
      if (!config.metrics && span === undefined) return NOOP_PROBE
      if (config.metrics) M.recordActive(1, fiber.getFiberRef(FiberRef.currentMetricLabels))
      return Effect.succeed(new Probe(config, span, toolName, now, timing))
    }),
  batch: (info, effect) =>
    Effect.withFiberRuntime((fiber) => {
      if (!tracingOn(config, fiber)) return effect
      const attributes: Record<string, unknown> = {
        [Attributes.batchId]: info.batchId,
        [Attributes.batchSize]: info.size
      }
      if (info.agent !== undefined) attributes[Attributes.agentId] = info.agent
      return Effect.withSpan(effect, BATCH_SPAN, { kind: "internal", attributes, captureStackTrace: false })
    })
})
