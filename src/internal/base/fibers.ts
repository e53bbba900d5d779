/**
 * Fibers started on the spot: a new fiber that runs synchronously until it first suspends, with
 * the starting fiber's context and refs but detached from it (its interruption never reaches
 * the new fiber). A fiber that completes without suspending is read with `unsafePoll`: no
 * scheduling round trip, no observer.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as Runtime from "effect/Runtime"
import * as RuntimeFlags from "effect/RuntimeFlags"

/**
 * Starts `effect` now on a detached fiber carrying `parent`'s context and fiber refs, with
 * `flags` as its runtime flags.
 *
 * @internal
 */
export const startNow = <A, E>(
  parent: Fiber.RuntimeFiber<unknown, unknown>,
  flags: RuntimeFlags.RuntimeFlags,
  effect: Effect.Effect<A, E>
): Fiber.RuntimeFiber<A, E> =>
  Runtime.runFork(
    Runtime.make({ context: parent.currentContext, fiberRefs: parent.getFiberRefs(), runtimeFlags: flags }),
    effect
  )

/**
 * `flags` with interruption enabled (for a tool body, interruptible whatever its caller's region).
 *
 * @internal
 */
export const interruptible = (flags: RuntimeFlags.RuntimeFlags): RuntimeFlags.RuntimeFlags =>
  RuntimeFlags.enable(flags, RuntimeFlags.Interruption)

/**
 * Waits for a fiber's exit without inheriting its fiber refs (cheaper than `Fiber.join`); an
 * interrupted wait removes its observer, so it can be run again.
 *
 * @internal
 */
export const awaitExit = <A, E>(fiber: Fiber.RuntimeFiber<A, E>): Effect.Effect<Exit.Exit<A, E>> =>
  Effect.async<Exit.Exit<A, E>>((resume) => {
    const done = fiber.unsafePoll()
    if (done !== null) return resume(Effect.succeed(done))
    const observer = (exit: Exit.Exit<A, E>) => resume(Effect.succeed(exit))
    fiber.addObserver(observer)
    return Effect.sync(() => fiber.removeObserver(observer))
  })
