/**
 * The Promise facade for non-Effect callers: one `ManagedRuntime` built once over a layer
 * (e.g. `Presets.layer(...)`), and the whole API as Promises — `execute` resolving to the call's
 * single frozen result, `runBatch` for one model message, tool and hook registrations with
 * Promise-returning (or plain) callbacks, `schemas`, and `dispose`. `execute` hands its input to
 * the runtime untouched (the runtime reads each field once) and never throws or rejects.
 *
 * @since 0.1.0
 */
import type * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import type { AgentId, DispatchExecution, ExecuteInput, ToolExecution } from "./Execution.js"
import * as errors from "./internal/facade/errors.js"
import { RuntimeDisposedError } from "./internal/facade/errors.js"
import * as internal from "./internal/facade/make.js"
import type { Guard, PostDecision, PreDecision } from "./Policy.js"
import type * as Scheduler from "./Scheduler.js"
import type * as Tool from "./Tool.js"
import type { ToolCallLog } from "./ToolCallLog.js"
import type { ToolRegistry } from "./ToolRegistry.js"
import type * as ToolRegistryModule from "./ToolRegistry.js"
import type { ToolRuntime } from "./ToolRuntime.js"
import type { ToolResult } from "./ToolResult.js"

/**
 * The message of calls made after `dispose()` started, and of the abort reason of calls it
 * cancels.
 *
 * @since 0.1.0
 * @category constants
 */
export const DISPOSED_MESSAGE = errors.DISPOSED_MESSAGE

/**
 * The message of the rejection of a `next()` called after its callback settled.
 *
 * @since 0.1.0
 * @category constants
 */
export const LATE_NEXT_MESSAGE = errors.LATE_NEXT_MESSAGE

export {
  /**
   * A method other than `execute` was called after `dispose()` started, or a running `runBatch`
   * was cut short by `dispose()`.
   *
   * @since 0.1.0
   * @category errors
   */
  RuntimeDisposedError
}

/**
 * Ends one registration (idempotent; resolves once it is removed, and at once after the facade
 * was disposed).
 *
 * @since 0.1.0
 * @category models
 */
export type Disposer = () => Promise<void>

/**
 * A pre-execute hook as a Promise callback: resolve with a `Policy.PreDecision`; `next()` runs the
 * rest of the chain below and resolves with its decision.
 *
 * @since 0.1.0
 * @category models
 */
export type PreExecuteCallback = (
  exec: ToolExecution,
  next: () => Promise<PreDecision>
) => PreDecision | PromiseLike<PreDecision>

/**
 * An around-dispatch wrapper as a Promise callback: `next()` runs the inner wrappers and the body
 * and resolves with their result. Assigning `exec.signal` before calling `next()` adds a
 * cancellation source for the body (it never removes the caller's).
 *
 * @since 0.1.0
 * @category models
 */
export type AroundCallback = (
  exec: DispatchExecution,
  next: () => Promise<ToolResult>
) => ToolResult | PromiseLike<ToolResult>

/**
 * A post-execute hook as a Promise callback: resolve with a `Policy.PostDecision`.
 *
 * @since 0.1.0
 * @category models
 */
export type PostExecuteCallback = (
  exec: ToolExecution,
  result: ToolResult,
  next: () => Promise<PostDecision>
) => PostDecision | PromiseLike<PostDecision>

/**
 * An observer of final results as a Promise callback. A rejection or a throw is contained and
 * never changes the result.
 *
 * @since 0.1.0
 * @category models
 */
export type ResultCallback = (exec: ToolExecution, result: ToolResult) => void | PromiseLike<void>

/**
 * `Scheduler.BatchOptions` with a Promise (or plain) `onCommit`. Each option is still read once, by
 * the scheduler.
 *
 * @since 0.1.0
 * @category models
 */
export interface BatchOptions extends Omit<Scheduler.BatchOptions, "onCommit"> {
  /**
   * Called after each commit, in model order; the batch waits for a returned promise. A throw
   * or a rejection is logged as a warning and ignored.
   */
  readonly onCommit?: ((event: Scheduler.CommitEvent) => void | PromiseLike<void>) | undefined
}

/**
 * Present when the layer provides `S`; `never` (not callable) otherwise.
 *
 * @since 0.1.0
 * @category models
 */
export type Requires<R, S, F> = [S] extends [R] ? F : never

/**
 * The facade. The registration methods need a layer that provides `ToolRegistry`, `runBatch`
 * also a `ToolCallLog` (`Presets.layer` provides both).
 *
 * Every registration resolves with a {@link Disposer} and lasts until that disposer is called
 * or `dispose()` runs; a refused registration rejects with the registry's typed error. Each
 * callback is adapted exactly like its Effect equivalent would behave: a returned thenable is
 * awaited until it settles (a rejection is the hook's failure, as `Effect.fail` of the reason),
 * a synchronous throw is the hook's failure (as a hook that throws), a returned Effect is run,
 * anything else is the hook's answer as it is (validated by the runtime, fail-closed). A
 * `next()` still running when its callback settles is awaited before the stage goes on (what it
 * started, a body included, is never abandoned); calling `next()` after that rejects with
 * {@link LATE_NEXT_MESSAGE}.
 *
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
  /**
   * Runs the tool calls of one model message (`Scheduler.runBatch`). Rejects with the
   * scheduler's `SchedulerError` when the log fails, with its `IllegalArgumentException` for
   * invalid calls or options, and with {@link RuntimeDisposedError} when called after
   * `dispose()` started or cut short by it (the batch still drains and records every call).
   */
  readonly runBatch: Requires<
    R,
    ToolRegistry | ToolCallLog,
    (calls: ReadonlyArray<Scheduler.ModelToolCall>, options?: BatchOptions) => Promise<Scheduler.BatchResult>
  >
  /** Registers a tool globally, or for `{ agent }`. */
  readonly register: Requires<
    R,
    ToolRegistry,
    (definition: Tool.ToolDefinition<R>, options?: ToolRegistryModule.TargetOptions) => Promise<Disposer>
  >
  /** Declares an agent and its parent. */
  readonly declareAgent: Requires<
    R,
    ToolRegistry,
    (agent: AgentId, options?: { readonly parent?: AgentId | undefined }) => Promise<Disposer>
  >
  /** Restricts the tools an agent inherits. */
  readonly restrict: Requires<
    R,
    ToolRegistry,
    (restriction: ToolRegistryModule.Restriction, options: ToolRegistryModule.TargetOptions) => Promise<Disposer>
  >
  /** Declares an agent's presentation mode. */
  readonly presentAs: Requires<
    R,
    ToolRegistry,
    (mode: ToolRegistryModule.PresentationMode, options: ToolRegistryModule.TargetOptions) => Promise<Disposer>
  >
  /**
   * Adds a guard. Guards are synchronous in both APIs: return a denial reason or `undefined`
   * (a returned Promise is not an answer and fails the call closed).
   */
  readonly guard: Requires<R, ToolRegistry, (guard: Guard, options?: ToolRegistryModule.TargetOptions) => Promise<Disposer>>
  readonly onPreExecute: Requires<
    R,
    ToolRegistry,
    (hook: PreExecuteCallback, options?: ToolRegistryModule.HookOptions) => Promise<Disposer>
  >
  readonly onExecute: Requires<
    R,
    ToolRegistry,
    (hook: AroundCallback, options?: ToolRegistryModule.HookOptions) => Promise<Disposer>
  >
  readonly onPostExecute: Requires<
    R,
    ToolRegistry,
    (hook: PostExecuteCallback, options?: ToolRegistryModule.HookOptions) => Promise<Disposer>
  >
  readonly onResult: Requires<
    R,
    ToolRegistry,
    (observer: ResultCallback, options?: ToolRegistryModule.HookOptions) => Promise<Disposer>
  >
  /** The model-facing schemas of the global view, or of `agent`'s. */
  readonly schemas: Requires<R, ToolRegistry, (agent?: AgentId) => Promise<ReadonlyArray<ToolRegistryModule.ToolSchema>>>
  /** Runs any Effect against the same runtime; rejects with `RuntimeDisposedError` after `dispose()`. */
  readonly run: <A, E>(effect: Effect.Effect<A, E, R>) => Promise<A>
  /**
   * Cancels every call and batch still running (as if its caller aborted with an `Error` whose
   * message is `the Promise runtime was disposed`: bodies are interrupted and awaited, each call
   * still ends with one result), waits for them and for registrations in progress, ends every
   * registration, then closes the runtime's scope (registrations made by its layer end). From
   * the moment it is called, new calls are refused (see `execute`) and every other method
   * rejects with {@link RuntimeDisposedError}. Idempotent: every call returns the same promise.
   */
  readonly dispose: () => Promise<void>
}

/**
 * Builds the facade over a layer that provides the `ToolRuntime` (e.g. `Presets.layer({ tools })`).
 *
 * @example
 * ```ts
 * import { PromiseApi } from "effect-tool-runtime"
 * import { Presets } from "effect-tool-runtime/layers"
 *
 * const tools = PromiseApi.make(Presets.layer())
 * const stop = await tools.onPreExecute(async (exec, next) => next())
 * const result = await tools.execute({ callId: "c1", name: "search", arguments: {} })
 * await stop()
 * await tools.dispose()
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: <R, E>(layer: Layer.Layer<R | ToolRuntime, E, never>) => PromiseToolRuntime<R | ToolRuntime> =
  internal.make
