/**
 * How a lane starts its dispatches: each on a fiber of its own, started synchronously with the
 * driver's context and refs; those the driver queues start together in one scheduled task once
 * it yields. A dispatch settles by pushing its exit to the lane and waking the driver.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberSet from "effect/FiberSet"
import * as Runtime from "effect/Runtime"
import type * as ToolRuntimeNs from "../../ToolRuntime.js"
import { startedDispatch } from "../pipeline/pipeline.js"
import type { Lane } from "./lane.js"

/**
 * Starts entry i's dispatch on its own fiber, synchronously. A dispatch that completes without
 * suspending settles at once (no set membership, no observer); one that suspends joins the
 * lane's fiber set (interrupted and awaited should the driver die) and settles when it ends,
 * waking the driver.
 */
const dispatchNow = (l: Lane, index: number, handle: ToolRuntimeNs.Execution): void => {
  const start = startedDispatch.get(l.runtime)
  let effect: Effect.Effect<ToolRuntimeNs.Dispatched> | undefined = undefined
  if (start !== undefined) {
    try {
      const started = start(handle, l.clock)
      if (!Effect.isEffect(started)) {
        l.settled.push({ index, exit: Exit.succeed(started) })
        l.wakeUp()
        return
      }
      effect = started
    } catch (thrown) {
      effect = Effect.die(thrown)
    }
  }
  const fiber = Runtime.runFork(l.dispatcher!, effect ?? Effect.suspend(() => l.runtime.dispatch(handle)))
  const exit = fiber.unsafePoll()
  if (exit !== null) {
    l.settled.push({ index, exit })
    l.wakeUp()
    return
  }
  FiberSet.unsafeAdd(l.fibers!, fiber, { interruptAs: l.driverId })
  fiber.addObserver((exit) => {
    l.settled.push({ index, exit })
    l.wakeUp()
  })
}

/** Starts every queued dispatch, in start order. @internal */
export const flushDispatches = (l: Lane): void => {
  l.flushing = false
  const queued = l.queued
  if (queued.length === 0) return
  l.queued = []
  for (const [index, handle] of queued) dispatchNow(l, index, handle)
}

/**
 * Queues entry i's dispatch. Like a fork, the queued dispatches start on the driver's scheduler
 * once the driver yields, but all of them in one scheduled task.
 *
 * @internal
 */
export const dispatchLater = (l: Lane, index: number, handle: ToolRuntimeNs.Execution): void => {
  l.queued.push([index, handle])
  if (l.flushing) return
  l.flushing = true
  l.scheduler!.scheduleTask(l.flush, l.priority)
}
