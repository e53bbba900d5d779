/**
 * The execution pipeline's entry points: the envelope (D-14), the staged steps and the service
 * (spec §8–§15, DECISIONS D-1…D-15). The stages live in `creation.ts`, `gate.ts`,
 * `dispatch.ts` and `finish.ts`.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as Approval from "../../Approval.js"
import type { ExecuteInput } from "../../Execution.js"
import * as IdGenerator from "../../IdGenerator.js"
import * as Registry from "../../ToolRegistry.js"
import type { ErrorDetail } from "../../ToolError.js"
import type * as ToolRuntime from "../../ToolRuntime.js"
import * as ToolTelemetry from "../../ToolTelemetry.js"
import { create } from "./creation.js"
import { dispatchIn, dispatchSync, plainDispatch } from "./dispatch.js"
import { type Result, type Runtime, State, succeedNow } from "./execution.js"
import { stateOfRunContext } from "./views.js"
import { finalizeIn, finishIn, finishSync } from "./finish.js"
import { gate, gateSync } from "./gate.js"
import { awaitExit, startNow } from "../base/fibers.js"
import { makeMarks } from "./output.js"
import type { Caller } from "../base/signals.js"

const INTERRUPTED_REASON = "the calling fiber was interrupted"

// ---------------------------------------------------------------------------------------------
// Envelope (D-14): the calling fiber's interruption is the caller's abort; the work finishes
// ---------------------------------------------------------------------------------------------

type Restore = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>

/**
 * Runs `work` on its own fiber, started on the spot and detached from the calling fiber, so
 * that interrupting the caller does not propagate into it (a parent's interruption reaches its
 * children at once): the caller's interruption aborts the call instead. It is always awaited,
 * on both paths, so it never outlives the call; work that completes without suspending is read
 * at once. Call inside `uninterruptibleMask`, `restore` being its restorer.
 */
const onOwnFiber = <A>(restore: Restore, abort: Abortable, work: Effect.Effect<A>): Effect.Effect<A> =>
  Effect.withFiberRuntime<A>((parent, status) => {
    const fiber = startNow(parent, status.runtimeFlags, work)
    const done = fiber.unsafePoll()
    if (done !== null) return done
    return Effect.onInterrupt(
      Effect.flatten(restore(awaitExit(fiber))),
      () =>
        Effect.suspend(() => {
          abort.abort()
          return Fiber.await(fiber)
        })
    )
  })

interface Abortable {
  readonly abort: () => void
}

const envelope = <A>(abort: Abortable, work: Effect.Effect<A>): Effect.Effect<A> =>
  Effect.uninterruptibleMask((restore) => onOwnFiber(restore, abort, work))

/** No user hook at any stage (a deadline-only wrapper runs natively): the call's only suspension can be its body. */
const hookless = (view: Registry.RegistryView): boolean =>
  view.preExecute.length === 0 && plainDispatch(view.aroundExecute) && view.postExecute.length === 0 &&
  view.observers.length === 0

const interruptedReason = () => new DOMException(INTERRUPTED_REASON, "AbortError")

/** The caller of a call that is being created: an abort may arrive before it exists. */
class PendingCaller {
  caller: Caller | undefined = undefined
  aborted = false
  reason: unknown = undefined
  set(caller: Caller): void {
    this.caller = caller
    if (this.aborted) caller.abort(this.reason)
  }
  abortWith(reason: unknown): void {
    if (this.aborted) return
    this.aborted = true
    this.reason = reason
    this.caller?.abort(reason)
  }
  abort(): void {
    this.abortWith(interruptedReason())
  }
}

/**
 * When a scheduler queued an input it built itself, for the call's `queue` stage: keyed by the
 * input object, so nothing is read from a caller's input.
 *
 * @internal
 */
export const queuedAt = new WeakMap<object, bigint>()

const gateCreated = (created: ToolRuntime.Prepared | State): Effect.Effect<ToolRuntime.Prepared> =>
  created instanceof State ? gate(created) : succeedNow(created)

/** Creation, then the call's probe when the runtime has telemetry, then the gate. */
const gateObserved = (
  runtime: Runtime,
  input: ExecuteInput,
  created: ToolRuntime.Prepared | State
): Effect.Effect<ToolRuntime.Prepared> => {
  const telemetry = runtime.telemetry
  if (telemetry === undefined) return gateCreated(created)
  const state = handleOf(created)
  const queued = typeof input === "object" && input !== null ? queuedAt.get(input) : undefined
  const { agent, callId, name } = state.execution
  return Effect.flatMap(telemetry.call({ toolName: name, callId, agent, queuedAt: queued }), (probe) => {
    state.probe = probe
    return gateCreated(created)
  })
}

const handleOf = (created: ToolRuntime.Prepared | State): State =>
  (created instanceof State ? created : created.handle) as State

/** Creation and the call's probe, without the gate: a durable batch journaled the gate's decision. */
const prepareDecidedIn = (
  runtime: Runtime,
  input: ExecuteInput,
  pending: PendingCaller
): Effect.Effect<ToolRuntime.Prepared> =>
  Effect.suspend(() => {
    const created = create(runtime, input, pending)
    if (!(created instanceof State)) return succeedNow(created)
    const decided: ToolRuntime.Prepared = { _tag: "Dispatch", handle: created }
    const telemetry = runtime.telemetry
    if (telemetry === undefined) return succeedNow(decided)
    const { agent, callId, name } = created.execution
    return Effect.map(telemetry.call({ toolName: name, callId, agent, queuedAt: undefined }), (probe) => {
      created.probe = probe
      return decided
    })
  })

const prepareIn = (
  runtime: Runtime,
  input: ExecuteInput,
  pending: PendingCaller
): Effect.Effect<ToolRuntime.Prepared> =>
  Effect.suspend(() => gateObserved(runtime, input, create(runtime, input, pending)))

const continueWith = (prepared: ToolRuntime.Prepared): Effect.Effect<Result> => {
  const state = prepared.handle as State
  switch (prepared._tag) {
    case "FinalResult":
      return finishIn(state, prepared.result)
    case "PostResult":
      return finalizeIn(state, prepared.result)
    case "Dispatch":
      return Effect.flatMap(dispatchIn(state), (dispatched) => finishDispatched(state, dispatched))
  }
}

const finishDispatched = (state: State, dispatched: ToolRuntime.Dispatched): Effect.Effect<Result> =>
  dispatched._tag === "FinalResult" ? finishIn(state, dispatched.result) : finalizeIn(state, dispatched.result)

/**
 * `execute`. A call whose agent has no hook at any stage runs on the calling fiber itself: its
 * stages are synchronous, so without telemetry a body that returns an `Exit` makes the whole call
 * one synchronous step. Otherwise the only wait is the body's, and that wait turns the caller's
 * interruption into the call's abort and goes on waiting (the body is always awaited; the stages
 * after it run to completion). Should hooks appear mid-call, the rest of the call moves onto its
 * own fiber. Every other call runs on its own fiber from the start.
 */
const executeIn = (runtime: Runtime, input: ExecuteInput, pending: PendingCaller): Effect.Effect<Result> =>
  Effect.withFiberRuntime((fiber) => {
    const started = startExecute(runtime, input, pending, fiber.currentDefaultServices.unsafeMap.get(Clock.Clock.key))
    return Effect.isEffect(started) ? started : Effect.succeed(started)
  })

/**
 * `execute` started synchronously (`clock` is the caller's): the result when the call completed
 * at once, else the Effect that runs the rest of it.
 */
const startExecute = (
  runtime: Runtime,
  input: ExecuteInput,
  pending: PendingCaller,
  clock: unknown
): Result | Effect.Effect<Result> => {
  const created = create(runtime, input, pending)
  const state = handleOf(created)
  if (!runtime.fast || !hookless(runtime.registry.unsafeView(state.agent))) {
    return Effect.uninterruptibleMask((restore) =>
      onOwnFiber(restore, pending, Effect.flatMap(gateObserved(runtime, input, created), continueWith))
    )
  }
  if (runtime.telemetry !== undefined) return inline(state, pending, gateObserved(runtime, input, created))
  const prepared = created instanceof State ? gateSync(created) : created
  if (prepared._tag !== "Dispatch") {
    const done = finishSync(state, prepared.result, prepared._tag === "PostResult")
    return done === undefined ? inline(state, pending, Effect.succeed(prepared)) : done
  }
  const dispatched = dispatchSync(state, clock)
  if (dispatched === undefined) return inline(state, pending, Effect.succeed(prepared))
  if (Effect.isEffect(dispatched)) return inline(state, pending, dispatched)
  const done = finishSync(state, dispatched.result, dispatched._tag === "PostResult")
  return done === undefined ? inline(state, pending, Effect.succeed(dispatched)) : done
}

/**
 * `execute` for the Promise facade, started outside any fiber: `control` receives the call's
 * abort; `clock` is the facade runtime's. The result when the call completed at once, else the
 * Effect that runs the rest of it (on a fiber the facade starts). Keyed by the public service.
 *
 * @internal
 */
export const startedExecute = new WeakMap<
  ToolRuntime.Service,
  (input: ExecuteInput, control: (abort: (reason: unknown) => void) => void, clock: unknown) => Result | Effect.Effect<Result>
>()

/**
 * The rest of an inline call from `step` (a prepared call, or a dispatch outcome), on the calling
 * fiber: its body wait guarded, any stage that gained hooks moved onto the call's own fiber.
 */
const inline = (
  state: State,
  pending: PendingCaller,
  step: Effect.Effect<ToolRuntime.Prepared | ToolRuntime.Dispatched>
): Effect.Effect<Result> =>
  Effect.uninterruptibleMask((restore) => {
    const registry = state.runtime.registry
    let inlined = true
    state.guard = (wait) =>
      Effect.flatMap(Effect.exit(restore(wait)), (exit) =>
        Exit.isSuccess(exit) ? Effect.succeed(exit.value) : Effect.suspend(() => {
          pending.abort()
          return wait
        }))
    const segment = <A>(effect: Effect.Effect<A>): Effect.Effect<A> => {
      if (inlined && hookless(registry.unsafeView(state.agent))) return effect
      inlined = false
      state.guard = undefined
      return onOwnFiber(restore, pending, effect)
    }
    return Effect.flatMap(step, (outcome) => {
      switch (outcome._tag) {
        case "FinalResult":
          return segment(Effect.suspend(() => finishIn(state, outcome.result)))
        case "PostResult":
          return segment(Effect.suspend(() => finalizeIn(state, outcome.result)))
        case "Dispatch":
          return Effect.flatMap(
            segment(Effect.suspend(() => dispatchIn(state))),
            (dispatched) => segment(Effect.suspend(() => finishDispatched(state, dispatched)))
          )
      }
    })
  })

const stateOf = (runtime: Runtime, handle: ToolRuntime.Execution): Effect.Effect<State> =>
  handle instanceof State && handle.runtime === runtime
    ? Effect.succeed(handle)
    : Effect.die(new TypeError("execution handle does not belong to this runtime"))

/**
 * Staged steps without the envelope fiber, for callers inside this library that own the
 * calls' cancellation themselves (the scheduler passes a batch signal it aborts on its own
 * interruption, and runs the steps on fibers it owns). Keyed by the public service.
 *
 * @internal
 */
export const unguardedStaged = new WeakMap<ToolRuntime.Service, ToolRuntime.Service>()

/**
 * The envelope-free staged steps of `service` when it is this library's runtime, else
 * `service` itself.
 *
 * @internal
 */
export const stagedOf = (service: ToolRuntime.Service): ToolRuntime.Service => unguardedStaged.get(service) ?? service

const stagedByRuntime = new WeakMap<Runtime, ToolRuntime.Service>()

/**
 * The staged `dispatch` of this library's envelope-free steps, started synchronously (`clock` is
 * the driver's): the outcome at once when it completed without suspending, else the Effect that
 * finishes it (uninterruptible, like `dispatch`). Keyed by the envelope-free service.
 *
 * @internal
 */
export const startedDispatch = new WeakMap<
  ToolRuntime.Service,
  (handle: ToolRuntime.Execution, clock: unknown) => ToolRuntime.Dispatched | Effect.Effect<ToolRuntime.Dispatched>
>()

/**
 * What a body needs to run nested executions under the runtime that runs it (the Code Mode
 * bridge): the runtime's envelope-free staged steps and its registry. `undefined` when `ctx` is
 * not a run context of this library's runtime.
 *
 * @internal
 */
export interface Nested {
  readonly staged: ToolRuntime.Service
  readonly registry: Registry.Service
}

/**
 * What a durable batch needs beyond the staged steps (D-22), keyed by the envelope-free staged
 * service: `prepareDecided` creates a call whose gate was journaled as allowing it (no
 * pre-execute, approval or guard runs again); `setIdempotencyKey` gives a prepared call's body its
 * `ctx.idempotencyKey`.
 *
 * @internal
 */
export interface Durable {
  readonly prepareDecided: (input: ExecuteInput) => Effect.Effect<ToolRuntime.Prepared>
  readonly setIdempotencyKey: (handle: ToolRuntime.Execution, key: string) => void
}

/** @internal */
export const durableOf = new WeakMap<ToolRuntime.Service, Durable>()

/** @internal */
export const nestedOf = (ctx: unknown): Nested | undefined => {
  const state = stateOfRunContext(ctx)
  if (state === undefined) return undefined
  const staged = stagedByRuntime.get(state.runtime)
  return staged === undefined ? undefined : { staged, registry: state.runtime.registry }
}

/** @internal */
export const make: Effect.Effect<ToolRuntime.Service, never, Registry.ToolRegistry> = Effect.suspend(() =>
  makeWith({ fastPaths: true })
)

/**
 * The runtime, with its fast paths on (`make`) or off: the general path alone, for the tests that
 * compare the two.
 *
 * @internal
 */
export const makeWith = (options: { readonly fastPaths: boolean }): Effect.Effect<
  ToolRuntime.Service,
  never,
  Registry.ToolRegistry
> => Effect.gen(function*() {
  const registry = yield* Registry.ToolRegistry
  const approval = yield* Effect.serviceOption(Approval.Approval)
  const ids = yield* Effect.serviceOption(IdGenerator.IdGenerator)
  const telemetry = yield* Effect.serviceOption(ToolTelemetry.ToolTelemetry)
  const runtime: Runtime = {
    registry,
    approval: Option.getOrUndefined(approval),
    ids: Option.getOrElse(ids, () => IdGenerator.random),
    marks: makeMarks(),
    running: new Set(),
    background: new Set(),
    telemetry: Option.getOrUndefined(telemetry),
    fast: options.fastPaths
  }
  const staged = <A>(handle: ToolRuntime.Execution, stage: (state: State) => Effect.Effect<A>) =>
    Effect.flatMap(stateOf(runtime, handle), (state) =>
      envelope({ abort: () => state.caller.abort(interruptedReason()) }, stage(state)))
  const run = (input: ExecuteInput, pending: PendingCaller) => executeIn(runtime, input, pending)
  const service: ToolRuntime.Service = {
    execute: (input) => Effect.suspend(() => run(input, new PendingCaller())),
    prepare: (input) =>
      Effect.suspend(() => {
        const pending = new PendingCaller()
        return envelope(pending, prepareIn(runtime, input, pending))
      }),
    dispatch: (handle) => staged(handle, dispatchIn),
    finalize: (handle, result) => staged(handle, (state) => finalizeIn(state, result)),
    finish: (handle, result) => staged(handle, (state) => finishIn(state, result))
  }
  const direct = <A>(handle: ToolRuntime.Execution, stage: (state: State) => Effect.Effect<A>) =>
    Effect.uninterruptible(Effect.flatMap(stateOf(runtime, handle), stage))
  const unguarded: ToolRuntime.Service = {
    ...service,
    prepare: (input) => Effect.uninterruptible(Effect.suspend(() => prepareIn(runtime, input, new PendingCaller()))),
    dispatch: (handle) => direct(handle, dispatchIn),
    finalize: (handle, result) => direct(handle, (state) => finalizeIn(state, result)),
    finish: (handle, result) => direct(handle, (state) => finishIn(state, result))
  }
  unguardedStaged.set(service, unguarded)
  durableOf.set(unguarded, {
    prepareDecided: (input) =>
      Effect.uninterruptible(Effect.suspend(() => prepareDecidedIn(runtime, input, new PendingCaller()))),
    setIdempotencyKey: (handle, key) => {
      if (handle instanceof State && handle.runtime === runtime) handle.idempotencyKey = key
    }
  })
  stagedByRuntime.set(runtime, unguarded)
  startedDispatch.set(unguarded, (handle, clock) => {
    if (!(handle instanceof State) || handle.runtime !== runtime || !runtime.fast || handle.probe !== undefined) {
      return unguarded.dispatch(handle)
    }
    const started = dispatchSync(handle, clock)
    if (started === undefined) return unguarded.dispatch(handle)
    return Effect.isEffect(started) ? Effect.uninterruptible(started) : started
  })
  startedExecute.set(service, (input, control, clock) => {
    const pending = new PendingCaller()
    control((reason) => pending.abortWith(reason))
    return startExecute(runtime, input, pending, clock)
  })
  yield* Effect.serviceOption(Scope.Scope).pipe(
    Effect.flatMap(Option.match({
      onNone: () => Effect.void,
      onSome: (scope) => Scope.addFinalizer(scope, Effect.sync(() => interruptBackground(runtime)))
    }))
  )
  return service
})

/** Interrupts the approval fibers left running, without waiting for them (APPR-5, D-14). */
const interruptBackground = (runtime: Runtime): void => {
  for (const fiber of runtime.background) fiber.unsafeInterruptAsFork(FiberId.none)
  runtime.background.clear()
}

/** @internal */
export const layer = <I>(tag: Context.Tag<I, ToolRuntime.Service>): Layer.Layer<I, never, Registry.ToolRegistry> =>
  Layer.scoped(tag, make)

/** @internal */
export type { ErrorDetail }
