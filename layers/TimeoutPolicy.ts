/**
 * The timeout policy (spec §17, TIMEOUT-1…5) as an around-dispatch wrapper Layer: it reads the
 * live definition's `timeoutMs`, fires through Effect's `Clock` (so `TestClock` drives it),
 * aborts the body's signal (the runtime interrupts the body and waits for it to exit) and
 * answers `TOOL_TIMEOUT`, which cancellation never overrides.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { DispatchExecution } from "../src/Execution.js"
import type { AroundHook } from "../src/Policy.js"
import { ToolRegistry } from "../src/ToolRegistry.js"
import type * as ToolRegistryModule from "../src/ToolRegistry.js"
import { armTimer, type DeadlinePlan, declareDeadline } from "../src/internal/pipeline/deadline.js"
import { followSignal } from "../src/internal/base/signals.js"
import { sanitizeThrown } from "../src/ToolError.js"
import * as ToolResult from "../src/ToolResult.js"

/**
 * The largest budget a timer accepts (2^31 - 1 ms).
 *
 * @since 0.1.0
 * @category constants
 */
export const MAX_TIMEOUT_MS = 2147483647

/**
 * The abort reason of a deadline that fired: an `Error` named `TimeoutReason` with the message
 * `TOOL_TIMEOUT after <ms>ms`, so a body that throws `signal.reason` throws an `Error`. Only the
 * wrapper's own instance classifies the result as `TOOL_TIMEOUT` (TIMEOUT-4): another
 * `TimeoutReason` (an outer wrapper's) is a foreign reason.
 *
 * @since 0.1.0
 * @category models
 */
export class TimeoutReason extends Error {
  readonly code = "TOOL_TIMEOUT" as const
  constructor(readonly timeoutMs: number) {
    super(`TOOL_TIMEOUT after ${timeoutMs}ms`)
  }
}
Object.defineProperty(TimeoutReason.prototype, "name", {
  value: "TimeoutReason",
  writable: true,
  enumerable: false,
  configurable: true
})

/**
 * @since 0.1.0
 * @category guards
 */
export const isValidTimeout = (ms: unknown): ms is number =>
  typeof ms === "number" && Number.isFinite(ms) && ms > 0 && ms <= MAX_TIMEOUT_MS

/**
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Budget for tools that declare no `timeoutMs` (default: none, TIMEOUT-1). */
  readonly defaultTimeoutMs?: number | undefined
}

/**
 * The wrapper itself, reading definitions from `registry`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeWrapper = (registry: ToolRegistryModule.Service, options?: Options): AroundHook<Error> => {
  const plan: DeadlinePlan = {
    budget: (agent, name) => {
      try {
        const entry = registry.unsafeView(agent).get(name)
        const timeoutMs = entry?.definition.timeoutMs ?? options?.defaultTimeoutMs
        if (timeoutMs === undefined) return undefined
        return isValidTimeout(timeoutMs) ? timeoutMs : { failure: Cause.fail(invalidBudget()) }
      } catch (thrown) {
        return { failure: Cause.die(sanitizeThrown(thrown)) }
      }
    },
    reason: (timeoutMs) => new TimeoutReason(timeoutMs),
    timedOut: (timeoutMs) => ToolResult.timedOut(timeoutMs)
  }
  const wrapper: AroundHook<Error> = (exec, next) => {
    const budget = plan.budget(exec.agent, exec.name)
    if (budget === undefined) return next
    if (typeof budget === "object") return Effect.failCause(budget.failure as Cause.Cause<Error>)
    return withDeadline(exec, next, budget)
  }
  return declareDeadline(wrapper, plan)
}

const invalidBudget = () => new Error("deadline timeoutMs must be a positive finite number no greater than 2147483647")

const withDeadline = (
  exec: DispatchExecution,
  next: Effect.Effect<ToolResult.ToolResult>,
  timeoutMs: number
): Effect.Effect<ToolResult.ToolResult> =>
  Effect.clockWith((clock) => {
    const upstream = exec.signal
    const deadline = new AbortController()
    let reason: TimeoutReason | undefined = undefined
    const onUpstream = () => deadline.abort(upstream.reason)
    if (upstream.aborted) deadline.abort(upstream.reason)
    else upstream.addEventListener("abort", onUpstream, { once: true })
    followSignal(deadline.signal, upstream)
    const fire = () => {
      if (deadline.signal.aborted) return
      reason = new TimeoutReason(timeoutMs)
      deadline.abort(reason)
    }
    return Effect.flatMap(armTimer(clock, timeoutMs, fire), (cancelTimer) => {
      exec.signal = deadline.signal
      const restore = Effect.suspend(() => {
        exec.signal = upstream
        upstream.removeEventListener("abort", onUpstream)
        return cancelTimer
      })
      return Effect.map(
        Effect.ensuring(next, restore),
        (result) => reason !== undefined && deadline.signal.reason === reason ? ToolResult.timedOut(timeoutMs) : result
      )
    })
  })

/**
 * Registers the timeout wrapper globally for the lifetime of the layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerWith = (options?: Options): Layer.Layer<never, never, ToolRegistry> =>
  Layer.scopedDiscard(Effect.flatMap(ToolRegistry, (registry) => registry.onExecute(makeWrapper(registry, options))))

/**
 * The timeout policy with no default budget.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<never, never, ToolRegistry> = layerWith()

/**
 * The timeout policy with a default budget for tools that declare none.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerWithDefault = (defaultTimeoutMs: number): Layer.Layer<never, never, ToolRegistry> =>
  layerWith({ defaultTimeoutMs })
