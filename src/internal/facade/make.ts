/**
 * The facade itself: one `ManagedRuntime` over the layer, the calls, batches and registrations
 * running on it (tracked so that `dispose()` cancels and awaits them), and `dispose()`. A call
 * starts synchronously once the runtime's synchronous start is known.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import type * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Scope from "effect/Scope"
import type { ExecuteInput } from "../../Execution.js"
import * as Json from "../../Json.js"
import type { Disposer, PromiseToolRuntime } from "../../PromiseApi.js"
import * as Scheduler from "../../Scheduler.js"
import type { ToolCallLog } from "../../ToolCallLog.js"
import { detailOfCause } from "../../ToolError.js"
import { ToolRegistry } from "../../ToolRegistry.js"
import type * as ToolRegistryModule from "../../ToolRegistry.js"
import { ToolRuntime } from "../../ToolRuntime.js"
import * as ToolResultModule from "../../ToolResult.js"
import type { ToolResult } from "../../ToolResult.js"
import { startedExecute } from "../pipeline/pipeline.js"
import { adaptAround, adaptObserver, adaptPost, adaptPre, batchOptions } from "./callbacks.js"
import { DISPOSED_MESSAGE, RuntimeDisposedError } from "./errors.js"

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

const RESOLVED: Promise<unknown> = Promise.resolve()

type StartedExecute = typeof startedExecute extends WeakMap<object, infer F> ? F : never

/** One call in flight: how to cancel it, and its settlement. */
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

/** @internal */
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
