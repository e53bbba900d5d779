/**
 * The Promise facade for non-Effect callers: one `ManagedRuntime` built once, `execute`
 * resolving to the call's single frozen result. The input is handed to the runtime untouched
 * (the runtime reads each field once); `execute` never throws and never rejects.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import type * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Schema from "effect/Schema"
import type { ExecuteInput } from "./Execution.js"
import { controlledExecute } from "./internal/pipeline.js"
import * as Json from "./Json.js"
import { detailOfCause } from "./ToolError.js"
import { ToolRuntime } from "./ToolRuntime.js"
import * as ToolResultModule from "./ToolResult.js"
import type { ToolResult } from "./ToolResult.js"

/**
 * The message of calls made after `dispose()` started, and of the abort reason of calls it
 * cancels.
 *
 * @since 0.1.0
 * @category constants
 */
export const DISPOSED_MESSAGE = "the Promise runtime was disposed"

/**
 * `run` was called after `dispose()` started.
 *
 * @since 0.1.0
 * @category errors
 */
export class RuntimeDisposedError extends Schema.TaggedError<RuntimeDisposedError>(
  "effect-tool-runtime/RuntimeDisposedError"
)("RuntimeDisposedError", {}) {
  override get message(): string {
    return DISPOSED_MESSAGE
  }
}

/**
 * @since 0.1.0
 * @category models
 */
export interface PromiseToolRuntime<R> {
  /**
   * Runs one call and resolves with its single frozen result. Never throws and never rejects:
   * a bad input is the runtime's error result; a call made after `dispose()` started resolves
   * at once with the error result `the Promise runtime was disposed` (it reaches no policy,
   * observer or log); a layer that fails to build gives an error result naming the failure.
   */
  readonly execute: (input: ExecuteInput) => Promise<ToolResult>
  /** Runs any Effect against the same runtime; rejects with `RuntimeDisposedError` after `dispose()`. */
  readonly run: <A, E>(effect: Effect.Effect<A, E, R>) => Promise<A>
  /**
   * Cancels every call still running (as if its caller aborted with an `Error` whose message is
   * `the Promise runtime was disposed`: bodies are interrupted and awaited, each call still ends
   * with one result), waits for them, then closes the runtime's scope (registrations made by its
   * layer end). From the moment it is called, new calls are refused (see `execute`). Idempotent:
   * every call returns the same promise.
   */
  readonly dispose: () => Promise<void>
}

const errorResult = (message: string): ToolResult => Json.deepFreeze(ToolResultModule.failure({ message }))

const DISPOSED_RESULT = errorResult(DISPOSED_MESSAGE)

/** The result of a call whose Effect did not succeed (a layer build failure, an interruption). */
const resultOfFailure = (cause: Cause.Cause<unknown>): ToolResult =>
  Cause.isInterruptedOnly(cause)
    ? Json.deepFreeze(ToolResultModule.aborted())
    : errorResult(`the tool runtime failed: ${detailOfCause(cause).message}`)

/** One call in flight: how to cancel it, and its settlement. */
class InFlight {
  abortCall: ((reason: unknown) => void) | undefined = undefined
  cancelled = false
  reason: unknown = undefined
  interrupt: (() => void) | undefined = undefined
  done: Promise<unknown> = Promise.resolve()
  readonly bind = (abort: (reason: unknown) => void) => {
    this.abortCall = abort
    if (this.cancelled) abort(this.reason)
  }
  cancel(reason: unknown): void {
    if (this.cancelled) return
    this.cancelled = true
    this.reason = reason
    if (this.abortCall !== undefined) this.abortCall(reason)
    else this.interrupt?.()
  }
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
  const inFlight = new Set<InFlight>()
  let disposing: Promise<void> | undefined = undefined
  const execute = (input: ExecuteInput): Promise<ToolResult> => {
    if (disposing !== undefined) return Promise.resolve(DISPOSED_RESULT)
    const call = new InFlight()
    const effect = Effect.flatMap(ToolRuntime, (tools) => {
      const controlled = controlledExecute.get(tools)
      if (controlled !== undefined) return controlled(input, call.bind)
      call.interrupt = () => fiber.unsafeInterruptAsFork(FiberId.none)
      return call.cancelled ? Effect.interrupt : tools.execute(input)
    })
    const fiber = runtime.runFork(effect)
    const result = new Promise<ToolResult>((resolve) => {
      fiber.addObserver((exit) => {
        inFlight.delete(call)
        resolve(Exit.isSuccess(exit) ? exit.value : resultOfFailure(exit.cause))
      })
    })
    call.done = result
    if (fiber.unsafePoll() === null) inFlight.add(call)
    return result
  }
  return {
    execute,
    run: (effect) => disposing !== undefined ? Promise.reject(new RuntimeDisposedError()) : runtime.runPromise(effect),
    dispose: () => {
      if (disposing !== undefined) return disposing
      const reason = new Error(DISPOSED_MESSAGE)
      const pending = [...inFlight]
      for (const call of pending) call.cancel(reason)
      disposing = Promise.allSettled(pending.map((call) => call.done)).then(() => runtime.dispose())
      return disposing
    }
  }
}
