/**
 * The Promise facade for non-Effect callers: one `ManagedRuntime` built once, `execute`
 * resolving to the call's single frozen result. The caller's `signal` is linked to the call;
 * every listener the facade or the runtime adds is removed when the call finishes.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import type { ExecuteInput } from "./Execution.js"
import { ToolRuntime } from "./ToolRuntime.js"
import type { ToolResult } from "./ToolResult.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface PromiseToolRuntime<R> {
  /** Runs one call; never rejects for tool, policy or cancellation outcomes. */
  readonly execute: (input: ExecuteInput) => Promise<ToolResult>
  /** Runs any Effect against the same runtime. */
  readonly run: <A, E>(effect: Effect.Effect<A, E, R>) => Promise<A>
  /**
   * Cancels every call still running (as if its caller aborted: bodies are interrupted and
   * awaited, each call still ends with one result), waits for them, then closes the runtime's
   * scope (registrations made by its layer end).
   */
  readonly dispose: () => Promise<void>
}

/**
 * Builds the facade over a layer that provides the `ToolRuntime` (e.g. `Presets.layerDefault`
 * merged with a layer registering the application's tools).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <R, E>(layer: Layer.Layer<R | ToolRuntime, E, never>): PromiseToolRuntime<R | ToolRuntime> => {
  const runtime = ManagedRuntime.make(layer)
  const inFlight = new Set<{ readonly cancel: AbortController; readonly done: Promise<unknown> }>()
  const execute = (input: ExecuteInput): Promise<ToolResult> => {
    const cancel = new AbortController()
    const upstream = input.signal
    const forward = () => cancel.abort(upstream?.reason)
    if (upstream?.aborted) cancel.abort(upstream.reason)
    else upstream?.addEventListener("abort", forward, { once: true })
    const done = runtime.runPromise(
      Effect.flatMap(ToolRuntime, (tools) => tools.execute({ ...input, signal: cancel.signal }))
    )
    const entry = { cancel, done }
    inFlight.add(entry)
    return done.finally(() => {
      inFlight.delete(entry)
      upstream?.removeEventListener("abort", forward)
    })
  }
  return {
    execute,
    run: (effect) => runtime.runPromise(effect),
    dispose: async () => {
      const pending = [...inFlight]
      for (const entry of pending) entry.cancel.abort(new Error("the Promise runtime was disposed"))
      await Promise.allSettled(pending.map((entry) => entry.done))
      await runtime.dispose()
    }
  }
}
