/**
 * The driver of a lane (spec §16): one fiber owns the ordered lane (classification, the start
 * record, prepare, finalize/finish, the result record, commit) in entry order; only `dispatch`
 * overlaps, on fibers owned by the lane, bounded by the driver's own count. It drives a batch's
 * calls and a `run_code` program's sub-calls (PTC-9), whose entries arrive while it runs.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as FiberSet from "effect/FiberSet"
import * as Runtime from "effect/Runtime"
import type { ExecutionMode } from "../../Policy.js"
import type * as ToolResult from "../../ToolResult.js"
import type * as ToolRuntimeNs from "../../ToolRuntime.js"
import { interruptible } from "../base/fibers.js"
import { dispatchLater, flushDispatches } from "./dispatches.js"
import {
  guarded,
  type Lane,
  malformedOutcome,
  pump,
  readOutcome,
  stagedFailure,
  waitSettlement,
  waitWork
} from "./lane.js"

const exclusive: Effect.Effect<ExecutionMode> = Effect.succeed("exclusive")

const STARTED: Effect.Effect<boolean> = Effect.succeed(true)
const NOT_STARTED: Effect.Effect<boolean> = Effect.succeed(false)

/**
 * start(i), with a pool place free: `begin` (a durable start record), prepare, then dispatch
 * into the pool or fill the slot. `false` (nothing done) when the lane had stopped before i
 * could start. A failure seen at any later point (after the record, after prepare) starts
 * nothing more: no prepare, no dispatch (SCHED-10).
 */
const start = (l: Lane, index: number, exclusive = false): Effect.Effect<boolean> =>
  Effect.suspend(() => {
    if (l.stopped()) return NOT_STARTED
    l.next = index + 1
    return Effect.flatMap(l.begin(index), (begun) => {
      if (begun === "failed" || l.failed()) return STARTED
      if (begun === "filled") return Effect.as(pump(l), true)
      return Effect.flatMap(
        Effect.suspend(() => l.prepareEntry(index)).pipe(Effect.catchAllCause(stagedFailure(l))),
        (prepared) => afterPrepare(l, index, exclusive, prepared)
      )
    })
  })

const afterPrepare = (
  l: Lane,
  index: number,
  exclusive: boolean,
  prepared: ToolRuntimeNs.Prepared | undefined
): Effect.Effect<boolean> => {
  const outcome = prepared === undefined ? undefined : readOutcome(prepared)
  if (prepared !== undefined && outcome === undefined) l.fail({ _tag: "Defect", cause: malformedOutcome("prepare") })
  if (outcome === undefined || l.failed()) return STARTED
  const handle = outcome.handle as ToolRuntimeNs.Execution
  // A lane with group commit (a durable one) holds every dispatch until its intent is stored: it
  // never takes the inline path, which would start the body before the intent row is written.
  if (outcome.tag === "Dispatch" && exclusive && l.inlineExclusive && l.groupCommit === undefined) {
    return Effect.flatMap(Effect.exit(Effect.suspend(() => l.runtime.dispatch(handle))), (exit) => {
      l.inFlight++
      l.handles.set(index, handle)
      l.absorb({ index, exit })
      return Effect.as(pump(l), true)
    })
  }
  if (outcome.tag === "Dispatch") {
    l.inFlight++
    l.running.add(index)
    l.handles.set(index, handle)
    if (l.groupCommit === undefined) dispatchLater(l, index, handle)
    else l.groupCommit.hold(index, handle)
  } else {
    l.ready[index] = { final: outcome.tag === "FinalResult", handle, result: outcome.result as ToolResult.ToolResult }
  }
  return Effect.as(pump(l), true)
}

/** Waits (and commits) while the pool is full: the driver counts its places itself. */
const acquire = (l: Lane): Effect.Effect<void> =>
  Effect.flatMap(pump(l), function loop(): Effect.Effect<void> {
    if (l.inFlight < l.maxParallel) return Effect.void
    return Effect.flatMap(waitSettlement(l), () => Effect.flatMap(pump(l), loop))
  })

/** Group barrier: every started entry committed (or, after a failure, nothing left to commit). */
const awaitCommitted = (l: Lane): Effect.Effect<void> =>
  Effect.flatMap(pump(l), function loop(): Effect.Effect<void> {
    if ((l.failure === undefined || l.commitsAfter(l.failure, l.cursor)) && l.cursor < l.next && l.inFlight > 0) {
      return Effect.flatMap(waitSettlement(l), () => Effect.flatMap(pump(l), loop))
    }
    return Effect.void
  })

/**
 * Drain: await every in-flight dispatch, committing in order unless the lane failed. A defect of
 * a commit step is recorded and the wait goes on: no dispatch is left behind.
 */
const drain = (l: Lane): Effect.Effect<void> =>
  Effect.flatMap(guarded(l, pump(l)), function loop(): Effect.Effect<void> {
    if (l.inFlight === 0) return Effect.void
    return Effect.flatMap(waitSettlement(l), () => Effect.flatMap(guarded(l, pump(l)), loop))
  })

const classifyAt = (l: Lane, index: number): Effect.Effect<ExecutionMode> =>
  Effect.suspend(() => l.classify(index)).pipe(Effect.catchAllCause(() => exclusive))

/**
 * Groups (SCHED-3), rolling pool (SCHED-4), ordered lane (SCHED-5, PTC-9). Every start path
 * checks `stopped()` (which absorbs pending settlements first) right before the entry starts.
 * An open lane with nothing to start waits for the next entry, inside the current group.
 */
const schedule = (l: Lane): Effect.Effect<void> => {
  const more = () => l.next < l.size() || !l.closed()
  const group = (): Effect.Effect<void> => {
    if (!more()) return Effect.void
    return Effect.flatMap(awaitCommitted(l), () => {
      if (l.stopped()) return Effect.void
      if (l.next >= l.size()) return Effect.flatMap(waitWork(l), group)
      return Effect.flatMap(classifyAt(l, l.next), (mode) =>
        Effect.flatMap(start(l, l.next, mode !== "parallel"), (started) => {
          if (!started) return Effect.void
          return mode !== "parallel" ? group() : pool()
        }))
    })
  }
  /** The rest of a parallel group; back to `group` at the first entry that is not parallel. */
  const pool = (): Effect.Effect<void> => {
    if (!more()) return group()
    if (l.next >= l.size()) {
      return Effect.flatMap(waitWork(l), () => Effect.flatMap(pump(l), () => l.stopped() ? Effect.void : pool()))
    }
    return Effect.flatMap(acquire(l), () => {
      if (l.stopped()) return Effect.void
      return Effect.flatMap(classifyAt(l, l.next), (mode) => {
        if (mode !== "parallel") return group()
        return Effect.flatMap(start(l, l.next), (started) => started ? pool() : Effect.void)
      })
    })
  }
  return Effect.suspend(group)
}

/**
 * The driver of a lane: schedule, drain, then the lane's `finish` (SCHED-9/10, PTC-14/15). Needs
 * a scope (the dispatch fibers' set). Whatever happens, no dispatch is left behind.
 *
 * @internal
 */
export const driveLane = Effect.fnUntraced(function*(l: Lane) {
  const fibers = yield* FiberSet.make<ToolRuntimeNs.Dispatched>()
  l.fibers = fibers
  yield* Effect.withFiberRuntime<void>((driver, status) => {
    l.driverId = driver.id()
    l.scheduler = driver.currentScheduler
    l.priority = driver.getFiberRef(FiberRef.currentSchedulingPriority)
    l.clock = driver.currentDefaultServices.unsafeMap.get(Clock.Clock.key)
    l.dispatcher = Runtime.make({
      context: driver.currentContext,
      fiberRefs: driver.getFiberRefs(),
      runtimeFlags: interruptible(status.runtimeFlags)
    })
    return Effect.void
  })
  // Runs before the FiberSet's own finalizer: should the driver ever die with dispatches still in
  // flight, they see the lane's signal abort before they are interrupted and awaited.
  yield* Effect.addFinalizer(() =>
    Effect.sync(() => {
      if (l.inFlight > 0 || l.settled.length > 0) l.controller.abort(l.deathReason())
      flushDispatches(l)
    })
  )
  yield* guarded(l, schedule(l))
  yield* drain(l)
  yield* guarded(l, l.finish())
})
