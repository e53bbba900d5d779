/**
 * Body dispatch (BODY-1…7) and around-dispatch (AROUND-1…8).
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import type * as Context from "effect/Context"
import { identity } from "effect/Function"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as Option from "effect/Option"
import type { RunContext } from "../../Execution.js"
import * as Json from "../../Json.js"
import type { JsonValue } from "../../Json.js"
import type * as Registry from "../../ToolRegistry.js"
import { detailOfCause, sanitizeThrown, ToolArgsError, ToolNotFoundError } from "../../ToolError.js"
import * as ToolResult from "../../ToolResult.js"
import type * as ToolRuntime from "../../ToolRuntime.js"
import { withCaptured } from "../base/context.js"
import {
  cancelled,
  concatContexts,
  failWith,
  frozen,
  observed,
  type Result,
  type Runtime,
  type State,
  withContexts,
  withDeferred
} from "./execution.js"
import { DispatchView, makeRunContext } from "./views.js"
import { interruptible, startNow } from "../base/fibers.js"
import { createSuccess, type Outcome } from "./output.js"
import { adoptReturned } from "../base/promise.js"
import { armTimer, type DeadlinePlan, DeadlineCancellation, deadlinePlanOf, liveClock } from "./deadline.js"
import { type BodyCancellation, callerCancellation, fuseCaller } from "../base/signals.js"
import { waterfall } from "./waterfall.js"

const noop = () => {}

/**
 * Calls the body now (BODY-5: a synchronous throw is a defect). What it returned is adopted
 * (an Effect, a thenable, a plain value); an Effect that is already an `Exit` (`Effect.succeed`,
 * `Effect.fail`, …) is that Exit on the spot, with no fiber to run it on.
 */
const invokeBody = (
  definition: Registry.RegisteredTool["definition"],
  args: JsonValue | undefined,
  ctx: RunContext
): Exit.Exit<unknown, unknown> | Effect.Effect<unknown, unknown, unknown> => {
  let returned: unknown
  try {
    returned = definition.execute(args as JsonValue, ctx)
    if (Exit.isExit(returned)) return returned
  } catch (thrown) {
    return Exit.die(sanitizeThrown(thrown))
  }
  return adoptReturned(returned, identity)
}

const withContext = <A, E>(
  effect: Effect.Effect<A, E, unknown>,
  context: Context.Context<never>
): Effect.Effect<A, E> =>
  context.unsafeMap.size === 0 ? effect as Effect.Effect<A, E> : withCaptured(context, () => effect)

/** Waits for the body fiber's exit; cancellation interrupts it (and still waits for the exit). */
const awaitBody = <A, E>(
  fiber: Fiber.RuntimeFiber<A, E>,
  cancellation: BodyCancellation
): Effect.Effect<Exit.Exit<A, E>> =>
  Effect.async<Exit.Exit<A, E>>((resume) => {
    const interrupt = () => fiber.unsafeInterruptAsFork(FiberId.none)
    let stopWatching = noop
    const observer = (exit: Exit.Exit<A, E>) => {
      stopWatching()
      resume(Effect.succeed(exit))
    }
    fiber.addObserver(observer)
    if (cancellation.aborted()) interrupt()
    else stopWatching = cancellation.onAbort(interrupt)
    return Effect.sync(() => {
      fiber.removeObserver(observer)
      stopWatching()
    })
  })

/**
 * Runs the body on its own interruptible fiber, started on the spot: a body that completes
 * without suspending is read at once; one that suspends is awaited (through the call's guard
 * when the call runs on its caller's fiber).
 */
const runBody = <A, E>(
  state: State,
  body: Effect.Effect<A, E>,
  cancellation: BodyCancellation
): Effect.Effect<Exit.Exit<A, E>> =>
  Effect.withFiberRuntime((parent, status) => {
    const fiber = startNow(parent, interruptible(status.runtimeFlags), body)
    const done = fiber.unsafePoll()
    if (done !== null) return Effect.succeed(done)
    const wait = awaitBody(fiber, cancellation)
    return state.guard === undefined ? wait : state.guard(wait)
  })

const isArgsFailure = (cause: Cause.Cause<unknown>): boolean => {
  const failure = Cause.failureOption(cause)
  try {
    return Option.isSome(failure) && failure.value instanceof ToolArgsError
  } catch {
    return false
  }
}

const releaseParent = (runtime: Runtime, state: State) => {
  if (--state.runningBodies === 0) runtime.running.delete(state)
}

/** The body under the around-dispatch wrappers: its cancellation is the caller's fused with the installed signal. */
const bodyDispatch = (state: State, view: DispatchView): Effect.Effect<Result> =>
  Effect.suspend(() => {
    const installed = DispatchView.installed(view)
    if (installed.replaced && !(installed.signal instanceof AbortSignal)) {
      return Effect.succeed(
        frozen(state.runtime, state.token, ToolResult.failure({ message: "exec.signal must remain an AbortSignal" }))
      )
    }
    return bodyWith(state, fuseCaller(state.caller, installed.signal as AbortSignal | undefined))
  })

/** The body with no wrapper: the caller's own cancellation. */
const bareBody = (state: State): Effect.Effect<Result> => Effect.suspend(() => bodyWith(state, callerCancellation(state.caller)))

/**
 * The body under a deadline the runtime runs itself (the only wrapper is deadline-only): the
 * same result as running the wrapper, including its timed-out answer when the deadline fired first.
 */
const deadlineBody = (state: State, plan: DeadlinePlan, timeoutMs: number): Effect.Effect<Result> =>
  Effect.clockWith((clock) => {
    if (clock === liveClock) {
      const started = liveDeadlineBody(state, plan, timeoutMs)
      return Effect.isEffect(started) ? started : Effect.succeed(started)
    }
    const cancellation = new DeadlineCancellation(state.caller)
    return Effect.flatMap(
      armTimer(clock, timeoutMs, () => cancellation.fire(plan.reason(timeoutMs))),
      (cancelTimer) =>
        Effect.map(
          Effect.ensuring(bodyWith(state, cancellation), cancelTimer),
          (result) => deadlineResult(plan, timeoutMs, cancellation, result)
        )
    )
  })

/**
 * The body under a native deadline on the live clock: a host timer, cleared when the body
 * settles; the result at once when the body settled without suspending.
 */
const liveDeadlineBody = (state: State, plan: DeadlinePlan, timeoutMs: number): Result | Effect.Effect<Result> => {
  const cancellation = new DeadlineCancellation(state.caller)
  const handle = setTimeout(() => cancellation.fire(plan.reason(timeoutMs)), timeoutMs)
  const now = bodyNow(state, cancellation)
  if (!(now instanceof PendingBody)) {
    clearTimeout(handle)
    return deadlineResult(plan, timeoutMs, cancellation, now)
  }
  return Effect.map(
    Effect.ensuring(awaitPending(state, now), Effect.sync(() => clearTimeout(handle))),
    (result) => deadlineResult(plan, timeoutMs, cancellation, result)
  )
}

const deadlineResult = (
  plan: DeadlinePlan,
  timeoutMs: number,
  cancellation: DeadlineCancellation,
  result: Result
): Result => cancellation.firedFirst !== undefined ? plan.timedOut(timeoutMs) : result

/** A body that was called and returned an Effect still to run. */
class PendingBody {
  constructor(
    readonly entry: Registry.RegisteredTool,
    readonly invokedBefore: boolean,
    readonly cancellation: BodyCancellation,
    readonly effect: Effect.Effect<unknown, unknown>
  ) {}
}

const bodyWith = (state: State, cancellation: BodyCancellation): Effect.Effect<Result> => {
  const now = bodyNow(state, cancellation)
  return now instanceof PendingBody ? awaitPending(state, now) : Effect.succeed(now)
}

const awaitPending = (state: State, pending: PendingBody): Effect.Effect<Result> =>
  Effect.map(
    runBody(state, pending.effect, pending.cancellation),
    (exit) => settleBody(state, pending.entry, pending.invokedBefore, pending.cancellation, exit)
  )

/**
 * The body's start: the result when it is known at once (not started, or a body that returned an
 * `Exit`), else the body still to run.
 */
const bodyNow = (state: State, cancellation: BodyCancellation): Result | PendingBody => {
  const { execution: exec, runtime } = state
  if (cancellation.aborted()) {
    cancellation.detach()
    return frozen(runtime, state.token, ToolResult.abortedBeforeDispatch())
  }
  const entry = runtime.registry.unsafeView(state.agent).resolve(state.name, state.hasParent)
  if (entry === undefined) {
    cancellation.detach()
    return frozen(runtime, state.token, failWith(new ToolNotFoundError({ toolName: state.name })))
  }
  const invokedBefore = state.bodyInvoked
  state.bodyInvoked = true
  if (state.runningBodies++ === 0) runtime.running.add(state)
  const ctx = makeRunContext(state, cancellation)
  const invoked = invokeBody(entry.definition, exec.arguments, ctx)
  if (runtime.fast && Exit.isExit(invoked)) return settleBody(state, entry, invokedBefore, cancellation, invoked)
  return new PendingBody(entry, invokedBefore, cancellation, withContext(invoked, entry.context))
}

const settleBody = (
  state: State,
  entry: Registry.RegisteredTool,
  invokedBefore: boolean,
  cancellation: BodyCancellation,
  exit: Exit.Exit<unknown, unknown>
): Result => {
  const { execution: exec, runtime } = state
  const mark = (result: Result) => frozen(runtime, state.token, result)
  cancellation.detach()
  releaseParent(runtime, state)
  if (Exit.isSuccess(exit)) {
    const success = createSuccess(entry, exec, exit.value, state.concluded, runtime.marks)
    if (!success.ok) return mark(failWith(success.error))
    return cancellation.aborted() ? mark(ToolResult.aborted()) : success.value
  }
  if (Cause.isInterruptedOnly(exit.cause)) {
    return mark(
      cancellation.aborted() ? ToolResult.aborted() : ToolResult.failure({ message: "tool body was interrupted" })
    )
  }
  if (!invokedBefore && isArgsFailure(exit.cause)) state.bodyInvoked = false
  return mark(ToolResult.failure(detailOfCause(exit.cause)))
}

type Dispatched = ToolRuntime.Dispatched

const finalDispatched = (result: Result): Dispatched => ({ _tag: "FinalResult", result })

/** A wrapper's result with each field read exactly once (AROUND-6). */
interface ResultRead {
  readonly isError: unknown
  readonly error: unknown
  readonly content: unknown
  readonly meta: unknown
  readonly additionalContexts: unknown
  readonly value: unknown
}

const MALFORMED_RESULT = "tools/execute returned a malformed result"

const readResult = (raw: unknown): Outcome<ResultRead> => {
  if (typeof raw !== "object" || raw === null) return { ok: false, error: new TypeError(MALFORMED_RESULT) }
  try {
    const r = raw as { readonly [K in keyof ResultRead]?: unknown }
    const isError = r.isError
    if (isError === true) {
      return {
        ok: true,
        value: {
          isError,
          error: r.error,
          content: r.content,
          meta: r.meta,
          additionalContexts: r.additionalContexts,
          value: undefined
        }
      }
    }
    if (isError === false) {
      return {
        ok: true,
        value: { isError, error: undefined, content: undefined, meta: undefined, additionalContexts: r.additionalContexts, value: r.value }
      }
    }
  } catch (error) {
    return { ok: false, error }
  }
  return { ok: false, error: new TypeError(MALFORMED_RESULT) }
}

/** AROUND-5/6: trust only this execution's canonical results; re-process everything else. */
const normalize = (state: State, raw: unknown): Outcome<Result> => {
  const { runtime } = state
  if (typeof raw === "object" && raw !== null && runtime.marks.results.get(raw) === state.token) {
    return { ok: true, value: raw as Result }
  }
  const read = readResult(raw)
  if (!read.ok) return read
  const r = read.value
  if (r.isError === true) {
    const rebuilt: Record<string, unknown> = { isError: true, error: r.error, content: r.content }
    if (r.meta !== undefined) rebuilt.meta = r.meta
    if (r.additionalContexts !== undefined) rebuilt.additionalContexts = r.additionalContexts
    return { ok: true, value: Json.deepFreeze(rebuilt) as unknown as Result }
  }
  const entry = runtime.registry.unsafeView(state.agent).resolve(state.name, state.hasParent)
  if (entry === undefined) return { ok: false, error: new ToolNotFoundError({ toolName: state.name }) }
  const success = createSuccess(entry, state.execution, r.value, state.concluded, runtime.marks)
  if (!success.ok) return success
  const contexts = r.additionalContexts
  return {
    ok: true,
    value: contexts === undefined ? success.value : { ...success.value, additionalContexts: contexts as never }
  }
}

const afterDispatch = (state: State, raw: unknown): Dispatched => {
  const normalized = normalize(state, raw)
  if (!normalized.ok) return finalDispatched(withDeferred(state, failWith(normalized.error)))
  let result = normalized.value
  if (state.deferred.length > 0) {
    const merged = concatContexts(state.deferred, result.additionalContexts)
    if (merged !== undefined) result = withContexts(result, merged)
  }
  if (state.caller.aborted && !result.isError) result = cancelled(state, result)
  return { _tag: "PostResult", result }
}

/**
 * What the around-dispatch stage is for this call: nothing to run, a deadline the runtime runs
 * itself, or the wrappers.
 */
const deadlineOnly = (wrappers: ReadonlyArray<unknown>): DeadlinePlan | undefined =>
  wrappers.length === 1 ? deadlinePlanOf(wrappers[0]) : undefined

/**
 * No wrapper, or a single deadline-only one: nothing of the around-dispatch stage can suspend
 * except the body.
 *
 * @internal
 */
export const plainDispatch = (wrappers: ReadonlyArray<unknown>): boolean =>
  wrappers.length === 0 || deadlineOnly(wrappers) !== undefined

/**
 * The dispatch stage started synchronously, for a call on the inline path with no probe: the
 * outcome at once when the body returned an `Exit` (or never started), else the Effect that
 * awaits the started body. `undefined` when the stage cannot start without an Effect (wrappers
 * to run, or a deadline on a clock other than the live one): nothing was done.
 *
 * @internal
 */
export const dispatchSync = (state: State, clock: unknown): Dispatched | Effect.Effect<Dispatched> | undefined => {
  const wrappers = state.runtime.registry.unsafeView(state.agent).aroundExecute
  const plan = wrappers.length === 0 ? undefined : deadlineOnly(wrappers)
  if (wrappers.length > 0 && (plan === undefined || clock !== liveClock)) return undefined
  const budget = plan === undefined ? undefined : plan.budget(state.agent, state.name)
  if (typeof budget === "object") return finalDispatched(withDeferred(state, ToolResult.failure(detailOfCause(budget.failure))))
  if (budget === undefined) {
    const now = bodyNow(state, callerCancellation(state.caller))
    return now instanceof PendingBody
      ? Effect.map(awaitPending(state, now), (raw) => afterDispatch(state, raw))
      : afterDispatch(state, now)
  }
  const started = liveDeadlineBody(state, plan!, budget)
  return Effect.isEffect(started)
    ? Effect.map(started, (raw) => afterDispatch(state, raw))
    : afterDispatch(state, started)
}

/** @internal */
export const dispatchIn = (state: State): Effect.Effect<Dispatched> => {
  const wrappers = state.runtime.registry.unsafeView(state.agent).aroundExecute
  if (wrappers.length === 0) {
    return Effect.map(observed(state, "body", bareBody(state)), (raw) => afterDispatch(state, raw))
  }
  const plan = state.runtime.fast ? deadlineOnly(wrappers) : undefined
  if (plan !== undefined) {
    const budget = plan.budget(state.agent, state.name)
    if (typeof budget === "object") {
      return Effect.succeed(finalDispatched(withDeferred(state, ToolResult.failure(detailOfCause(budget.failure)))))
    }
    const body = budget === undefined ? bareBody(state) : deadlineBody(state, plan, budget)
    return Effect.map(observed(state, "body", body), (raw) => afterDispatch(state, raw))
  }
  const view = new DispatchView(state.execution, state.caller)
  const body = observed(state, "body", bodyDispatch(state, view))
  return Effect.map(
    Effect.exit(waterfall("tools/execute", wrappers, body, (wrapper, next) => wrapper(view, next))),
    (exit) =>
      Exit.isFailure(exit)
        ? finalDispatched(withDeferred(state, ToolResult.failure(detailOfCause(exit.cause))))
        : afterDispatch(state, exit.value)
  )
}
