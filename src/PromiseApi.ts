/**
 * The Promise facade for non-Effect callers: one `ManagedRuntime` built once over a layer
 * (e.g. `Presets.layer(...)`), and the whole API as Promises — `execute` resolving to the call's
 * single frozen result, `runBatch` for one model message, tool and hook registrations with
 * Promise-returning (or plain) callbacks, `schemas`, and `dispose`. `execute` hands its input to
 * the runtime untouched (the runtime reads each field once) and never throws or rejects.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import type * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import { types } from "node:util"
import type { AgentId, DispatchExecution, ExecuteInput, ToolExecution } from "./Execution.js"
import { startedExecute } from "./internal/pipeline/pipeline.js"
import { adopt } from "./internal/base/promise.js"
import * as Json from "./Json.js"
import type { Guard, PostDecision, PreDecision } from "./Policy.js"
import * as Scheduler from "./Scheduler.js"
import type * as Tool from "./Tool.js"
import type { ToolCallLog } from "./ToolCallLog.js"
import { detailOfCause, sanitizeThrown } from "./ToolError.js"
import { ToolRegistry } from "./ToolRegistry.js"
import type * as ToolRegistryModule from "./ToolRegistry.js"
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
 * The message of the rejection of a `next()` called after its callback settled.
 *
 * @since 0.1.0
 * @category constants
 */
export const LATE_NEXT_MESSAGE = "next() was called after the callback it was given to had settled"

/**
 * A method other than `execute` was called after `dispose()` started, or a running `runBatch`
 * was cut short by `dispose()`.
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

const errorResult = (message: string): ToolResult => Json.deepFreeze(ToolResultModule.failure({ message }))

const DISPOSED_RESULT = errorResult(DISPOSED_MESSAGE)

/** The result of a call whose Effect did not succeed (a layer build failure, an interruption). */
const resultOfFailure = (cause: Cause.Cause<unknown>): ToolResult =>
  Cause.isInterruptedOnly(cause)
    ? Json.deepFreeze(ToolResultModule.aborted())
    : errorResult(`the tool runtime failed: ${detailOfCause(cause).message}`)

/** Something running on the runtime that `dispose()` cancels (if it can) and awaits. */
interface Task {
  readonly cancel: (reason: unknown) => void
  readonly done: Promise<unknown>
}

/** One call in flight: how to cancel it, and its settlement. */
const RESOLVED: Promise<unknown> = Promise.resolve()

type StartedExecute = typeof startedExecute extends WeakMap<object, infer F> ? F : never

class InFlight implements Task {
  abortCall: ((reason: unknown) => void) | undefined = undefined
  cancelled = false
  reason: unknown = undefined
  interrupt: (() => void) | undefined = undefined
  done: Promise<unknown> = RESOLVED
  readonly bind = (abort: (reason: unknown) => void) => {
    this.abortCall = abort
    if (this.cancelled) abort(this.reason)
  }
  readonly cancel = (reason: unknown): void => {
    if (this.cancelled) return
    this.cancelled = true
    this.reason = reason
    if (this.abortCall !== undefined) this.abortCall(reason)
    else this.interrupt?.()
  }
}

// ---------------------------------------------------------------------------------------------
// Adapting Promise callbacks to Effect hooks
// ---------------------------------------------------------------------------------------------

const isGenuineEffect = (value: unknown): boolean => !types.isProxy(value) && Effect.isEffect(value)

/**
 * What a callback handed back, as the Effect its Effect-API equivalent would be: an Effect runs,
 * a thenable is adopted (its `then` read once; awaited until it settles; a rejection or a `then`
 * that throws is a failure), anything else is the value.
 */
const adoptReturned = (out: unknown): Effect.Effect<unknown, unknown> => {
  if ((typeof out !== "object" && typeof out !== "function") || out === null) return Effect.succeed(out)
  let then: unknown
  try {
    if (isGenuineEffect(out)) return out as Effect.Effect<unknown, unknown>
    then = (out as { readonly then?: unknown }).then
  } catch (thrown) {
    return Effect.fail(sanitizeThrown(thrown))
  }
  return typeof then === "function"
    ? adopt(out as PromiseLike<unknown>, then as Parameters<typeof adopt>[1])
    : Effect.succeed(out)
}

/**
 * Calls a Promise callback with a `next()` that runs `next` on the calling fiber's runtime. The
 * callback is called at once; a synchronous throw (of any value) is a defect, as the runtime
 * makes of a throwing Effect hook. Once the callback's answer settles, every `next()` still
 * running is awaited (never interrupted: interrupting the rest of a chain could abandon a
 * body), and later `next()` calls reject.
 */
const withNext = <A>(
  next: Effect.Effect<A, unknown> | undefined,
  call: (nextP: () => Promise<A>) => unknown
): Effect.Effect<unknown, unknown> =>
  Effect.flatMap(Effect.runtime<never>(), (runtime) => {
    const running = new Set<Fiber.RuntimeFiber<A, unknown>>()
    let open = true
    const nextP = (): Promise<A> => {
      if (!open || next === undefined) return Promise.reject(new Error(LATE_NEXT_MESSAGE))
      return new Promise<A>((resolve, reject) => {
        const fiber = Runtime.runFork(runtime)(next)
        running.add(fiber)
        fiber.addObserver((exit) => {
          running.delete(fiber)
          if (Exit.isSuccess(exit)) resolve(exit.value)
          else reject(Cause.squash(exit.cause))
        })
      })
    }
    const settled = Effect.suspend(() => {
      open = false
      return running.size === 0 ? Effect.void : Effect.asVoid(Fiber.awaitAll(Array.from(running)))
    })
    let out: unknown
    try {
      out = call(nextP)
    } catch (thrown) {
      return Effect.ensuring(Effect.die(sanitizeThrown(thrown)), settled)
    }
    return Effect.ensuring(adoptReturned(out), settled)
  })

// The parameters are named as the registry names them, so that calling a value that is not a
// function throws the same TypeError (`hook is not a function`) as it does through the Effect API.
const adaptPre = (hook: PreExecuteCallback) => (exec: ToolExecution, next: Effect.Effect<PreDecision>) =>
  withNext(next, (nextP) => hook(exec, nextP)) as Effect.Effect<PreDecision, unknown>

const adaptAround = (hook: AroundCallback) => (exec: DispatchExecution, next: Effect.Effect<ToolResult>) =>
  withNext(next, (nextP) => hook(exec, nextP)) as Effect.Effect<ToolResult, unknown>

const adaptPost =
  (hook: PostExecuteCallback) => (exec: ToolExecution, result: ToolResult, next: Effect.Effect<PostDecision>) =>
    withNext(next, (nextP) => hook(exec, result, nextP)) as Effect.Effect<PostDecision, unknown>

const adaptObserver = (observer: ResultCallback) => (exec: ToolExecution, result: ToolResult) =>
  Effect.asVoid(withNext(undefined, () => observer(exec, result)))

const adaptCommit = (onCommit: (event: Scheduler.CommitEvent) => unknown) => (event: Scheduler.CommitEvent) =>
  Effect.asVoid(withNext(undefined, () => onCommit(event)))

/**
 * The options the scheduler reads: `options` itself when it is not an object (the scheduler
 * reports it), else a view that forwards every read once to `options` and adapts `onCommit`.
 */
const batchOptions = (options: unknown): unknown => {
  if ((typeof options !== "object" && typeof options !== "function") || options === null) return options
  try {
    return new Proxy(options as object, {
      get: (target, key) => {
        const value: unknown = Reflect.get(target, key)
        return key === "onCommit" && typeof value === "function"
          ? adaptCommit(value as (event: Scheduler.CommitEvent) => unknown)
          : value
      }
    })
  } catch {
    return options
  }
}

// ---------------------------------------------------------------------------------------------
// The facade
// ---------------------------------------------------------------------------------------------

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
export const make = <R, E>(layer: Layer.Layer<R | ToolRuntime, E, never>): PromiseToolRuntime<R | ToolRuntime> => {
  type Services = ToolRuntime | ToolRegistry | ToolCallLog
  const runtime = ManagedRuntime.make(layer) as unknown as ManagedRuntime.ManagedRuntime<Services, E>
  const tasks = new Set<Task>()
  const scopes = new Set<Scope.CloseableScope>()
  let disposing: Promise<void> | undefined = undefined

  const track = (task: Task): void => {
    tasks.add(task)
    void task.done.then(() => tasks.delete(task))
  }

  /**
   * Starts `effect` on the runtime. The promise rejects with the failure or defect itself (not a
   * wrapper); when `cancel` interrupted it, with `RuntimeDisposedError`.
   */
  const start = <A>(effect: Effect.Effect<A, unknown, Services>): { readonly done: Promise<A>; readonly cancel: () => void } => {
    let cancelled = false
    const fiber = runtime.runFork(effect)
    const done = new Promise<A>((resolve, reject) => {
      fiber.addObserver((exit) => {
        if (Exit.isSuccess(exit)) resolve(exit.value)
        else if (cancelled && Cause.isInterruptedOnly(exit.cause)) reject(new RuntimeDisposedError())
        else reject(Cause.squash(exit.cause))
      })
    })
    const cancel = () => {
      if (cancelled || fiber.unsafePoll() !== null) return
      cancelled = true
      fiber.unsafeInterruptAsFork(FiberId.none)
    }
    return { done, cancel }
  }

  const settled = (promise: Promise<unknown>): Promise<void> => promise.then(() => undefined, () => undefined)

  /** Runs `effect` as a task `dispose()` awaits (and interrupts when `cancellable`). */
  const runTask = <A>(effect: Effect.Effect<A, unknown, Services>, cancellable: boolean): Promise<A> => {
    if (disposing !== undefined) return Promise.reject(new RuntimeDisposedError())
    const task = start(effect)
    track({ cancel: cancellable ? task.cancel : () => {}, done: settled(task.done) })
    return task.done
  }

  const closeScope = (scope: Scope.CloseableScope): Promise<void> => {
    scopes.delete(scope)
    return settled(Effect.runPromise(Scope.close(scope, Exit.void)))
  }

  /**
   * A scoped registration that lasts until its disposer runs or the facade is disposed. Its task
   * ends once the scope is held in `scopes`, so `dispose()` always finds it there.
   */
  const registration = (
    contribute: (registry: ToolRegistryModule.Service) => Effect.Effect<void, unknown, Scope.Scope | Services>
  ): Promise<Disposer> => {
    if (disposing !== undefined) return Promise.reject(new RuntimeDisposedError())
    const task = start(
      Effect.flatMap(ToolRegistry, (registry) =>
        Effect.flatMap(Scope.make(), (scope) =>
          Effect.suspend(() => contribute(registry)).pipe(
            Scope.extend(scope),
            Effect.onError((cause) => Scope.close(scope, Exit.failCause(cause))),
            Effect.as(scope)
          )))
    )
    const registered = task.done.then((scope): Disposer => {
      scopes.add(scope)
      let closing: Promise<void> | undefined = undefined
      return () => (closing ??= closeScope(scope))
    })
    track({ cancel: () => {}, done: settled(registered) })
    return registered
  }

  /** The runtime's synchronous start and the facade runtime's clock, once a first call found them. */
  let started: { readonly start: StartedExecute; readonly clock: unknown } | undefined = undefined

  /** Runs the rest of a call on a fiber: read at once when it does not suspend, else tracked. */
  const settle = (
    call: InFlight,
    effect: Effect.Effect<ToolResult, unknown, Services>,
    onFiber?: (fiber: Fiber.RuntimeFiber<ToolResult, unknown>) => void
  ): Promise<ToolResult> => {
    const fiber = runtime.runFork(effect)
    onFiber?.(fiber)
    const now = fiber.unsafePoll()
    if (now !== null) return Promise.resolve(Exit.isSuccess(now) ? now.value : resultOfFailure(now.cause))
    const result = new Promise<ToolResult>((resolve) => {
      fiber.addObserver((exit) => {
        resolve(Exit.isSuccess(exit) ? exit.value : resultOfFailure(exit.cause))
      })
    })
    call.done = result
    track(call)
    return result
  }

  /**
   * A call starts synchronously once the runtime is built (a call that completes at once needs
   * no fiber at all); the first calls look the runtime up on a fiber.
   */
  const execute = (input: ExecuteInput): Promise<ToolResult> => {
    if (disposing !== undefined) return Promise.resolve(DISPOSED_RESULT)
    const call = new InFlight()
    if (started !== undefined) {
      let outcome: ToolResult | Effect.Effect<ToolResult>
      try {
        outcome = started.start(input, call.bind, started.clock)
      } catch (thrown) {
        outcome = Effect.die(thrown)
      }
      return Effect.isEffect(outcome) ? settle(call, outcome) : Promise.resolve(outcome)
    }
    let current: Fiber.RuntimeFiber<ToolResult, unknown> | undefined = undefined
    const effect = Effect.flatMap(ToolRuntime, (tools) => {
      const start = startedExecute.get(tools)
      if (start !== undefined) {
        return Effect.clockWith((clock) => {
          started = { start, clock }
          const outcome = start(input, call.bind, clock)
          return Effect.isEffect(outcome) ? outcome : Effect.succeed(outcome)
        })
      }
      call.interrupt = () => current?.unsafeInterruptAsFork(FiberId.none)
      return call.cancelled ? Effect.interrupt : tools.execute(input)
    })
    return settle(call, effect, (fiber) => {
      current = fiber
    })
  }

  const facade: PromiseToolRuntime<Services> = {
    execute,
    runBatch: (calls, options) =>
      runTask(Scheduler.runBatch(calls, batchOptions(options) as Scheduler.BatchOptions | undefined), true),
    register: (definition, options) => registration((registry) => registry.register(definition, options)),
    declareAgent: (agent, options) => registration((registry) => registry.declareAgent(agent, options)),
    restrict: (restriction, options) => registration((registry) => registry.restrict(restriction, options)),
    presentAs: (mode, options) => registration((registry) => registry.presentAs(mode, options)),
    guard: (guard, options) => registration((registry) => registry.guard(guard, options)),
    onPreExecute: (hook, options) => registration((registry) => registry.onPreExecute(adaptPre(hook), options)),
    onExecute: (hook, options) => registration((registry) => registry.onExecute(adaptAround(hook), options)),
    onPostExecute: (hook, options) => registration((registry) => registry.onPostExecute(adaptPost(hook), options)),
    onResult: (observer, options) => registration((registry) => registry.onResult(adaptObserver(observer), options)),
    schemas: (agent) => runTask(Effect.flatMap(ToolRegistry, (registry) => registry.schemas(agent)), false),
    run: (effect) => disposing !== undefined ? Promise.reject(new RuntimeDisposedError()) : runtime.runPromise(effect),
    dispose: () => {
      if (disposing !== undefined) return disposing
      // refuse new work before any cancellation can run user code (an abort listener)
      let proceed: (after: Promise<void>) => void = () => {}
      disposing = new Promise<void>((resolve) => {
        proceed = resolve
      })
      const reason = new Error(DISPOSED_MESSAGE)
      const pending = Array.from(tasks)
      for (const task of pending) task.cancel(reason)
      proceed(
        Promise.all(pending.map((task) => task.done))
          .then(() => Promise.all(Array.from(scopes).reverse().map(closeScope)))
          .then(() => runtime.dispose())
      )
      return disposing
    }
  }
  return facade as unknown as PromiseToolRuntime<R | ToolRuntime>
}
