/**
 * Promise callbacks as the Effect hooks the registry takes: a callback is called at once with a
 * `next()` that runs the rest of the chain on the caller's runtime, and what it hands back is
 * adopted as its Effect-API equivalent would be (an Effect runs, a thenable is awaited, anything
 * else is the answer). Also the batch options view that adapts `onCommit`.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Runtime from "effect/Runtime"
import { types } from "node:util"
import type { DispatchExecution, ToolExecution } from "../../Execution.js"
import type { PostDecision, PreDecision } from "../../Policy.js"
import type { AroundCallback, PostExecuteCallback, PreExecuteCallback, ResultCallback } from "../../PromiseApi.js"
import type * as Scheduler from "../../Scheduler.js"
import { sanitizeThrown } from "../../ToolError.js"
import type { ToolResult } from "../../ToolResult.js"
import { adopt } from "../base/promise.js"
import { LATE_NEXT_MESSAGE } from "./errors.js"

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
/** @internal */
export const adaptPre = (hook: PreExecuteCallback) => (exec: ToolExecution, next: Effect.Effect<PreDecision>) =>
  withNext(next, (nextP) => hook(exec, nextP)) as Effect.Effect<PreDecision, unknown>

/** @internal */
export const adaptAround = (hook: AroundCallback) => (exec: DispatchExecution, next: Effect.Effect<ToolResult>) =>
  withNext(next, (nextP) => hook(exec, nextP)) as Effect.Effect<ToolResult, unknown>

/** @internal */
export const adaptPost =
  (hook: PostExecuteCallback) => (exec: ToolExecution, result: ToolResult, next: Effect.Effect<PostDecision>) =>
    withNext(next, (nextP) => hook(exec, result, nextP)) as Effect.Effect<PostDecision, unknown>

/** @internal */
export const adaptObserver = (observer: ResultCallback) => (exec: ToolExecution, result: ToolResult) =>
  Effect.asVoid(withNext(undefined, () => observer(exec, result)))

const adaptCommit = (onCommit: (event: Scheduler.CommitEvent) => unknown) => (event: Scheduler.CommitEvent) =>
  Effect.asVoid(withNext(undefined, () => onCommit(event)))

/**
 * The options the scheduler reads: `options` itself when it is not an object (the scheduler
 * reports it), else a view that forwards every read once to `options` and adapts `onCommit`.
 */
/** @internal */
export const batchOptions = (options: unknown): unknown => {
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
