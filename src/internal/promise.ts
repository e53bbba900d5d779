/**
 * Promise bodies: detection and settlement-awaiting adaptation (D-14: a started body is never
 * abandoned, and an error it settles with after cancellation is kept, PREC-1 row 10).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import { sanitizeThrown } from "../ToolError.js"

/** @internal */
export const isThenable = (u: unknown): u is PromiseLike<unknown> => {
  try {
    return (typeof u === "object" || typeof u === "function") && u !== null &&
      typeof (u as { then?: unknown }).then === "function"
  } catch {
    return false
  }
}

/**
 * Awaits `promise` until it settles, uninterruptibly: the body's own signal (not fiber
 * interruption) is how a Promise body learns it was cancelled.
 *
 * @internal
 */
export const awaitSettled = <A>(promise: PromiseLike<A>): Effect.Effect<A, unknown> =>
  Effect.uninterruptible(
    Effect.async<A, unknown>((resume) => {
      Promise.resolve(promise).then(
        (a) => resume(Effect.succeed(a)),
        (e) => resume(Effect.fail(sanitizeThrown(e)))
      )
    })
  )

/**
 * Runs user code that returns an Effect: a synchronous throw (even of a hostile value) becomes
 * a defect carrying a value Effect can handle.
 *
 * @internal
 */
export const suspendUser = <A, E, R>(run: () => Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.suspend(() => {
    try {
      return run()
    } catch (thrown) {
      return Effect.die(sanitizeThrown(thrown))
    }
  })
