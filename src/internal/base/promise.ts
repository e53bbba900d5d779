/**
 * Promise bodies: detection and settlement-awaiting adoption (D-14: a started body is never
 * abandoned, and an error it settles with after cancellation is kept, PREC-1 row 10).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import { sanitizeThrown } from "../../ToolError.js"

/** A thenable's `then`, as read by {@link thenOf}. @internal */
export type Then = (onFulfilled: (value: unknown) => void, onRejected: (reason: unknown) => void) => unknown

/**
 * The `then` method of a thenable, read exactly once; `undefined` for anything else (and for
 * values whose inspection throws).
 *
 * @internal
 */
export const thenOf = (u: unknown): Then | undefined => {
  if ((typeof u !== "object" && typeof u !== "function") || u === null) return undefined
  try {
    const then = (u as { readonly then?: unknown }).then
    return typeof then === "function" ? then as Then : undefined
  } catch {
    return undefined
  }
}

/** @internal */
export const isThenable = (u: unknown): u is PromiseLike<unknown> => thenOf(u) !== undefined

/**
 * Adopts `thenable` now: the settlement handlers are attached before this returns (so a
 * rejection is always observed, even if the returned Effect never runs), `then` is called once
 * with the value as `this`, and a `then` that throws is a rejection. The returned Effect waits
 * for the settlement and is interruptible (interrupting the wait does not stop the settlement
 * being observed); it may be run again to keep waiting.
 *
 * @internal
 */
export const settlement = <A>(thenable: PromiseLike<A>, then: Then = thenOf(thenable)!): Effect.Effect<A, unknown> => {
  let settled: Effect.Effect<A, unknown> | undefined = undefined
  let resume: ((effect: Effect.Effect<A, unknown>) => void) | undefined = undefined
  const settle = (effect: Effect.Effect<A, unknown>) => {
    if (settled !== undefined) return
    settled = effect
    const waiting = resume
    resume = undefined
    waiting?.(effect)
  }
  const onFulfilled = (a: unknown) => settle(Effect.succeed(a as A))
  const onRejected = (e: unknown) => settle(Effect.fail(sanitizeThrown(e)))
  try {
    new Promise<unknown>((res, rej) => then.call(thenable, res, rej)).then(onFulfilled, onRejected)
  } catch (error) {
    onRejected(error)
  }
  return Effect.async<A, unknown>((cb) => {
    if (settled !== undefined) return cb(settled)
    resume = cb
    return Effect.sync(() => {
      if (resume === cb) resume = undefined
    })
  })
}

/**
 * Awaits `thenable` until it settles, uninterruptibly (see {@link settlement}): the body's own
 * signal, not fiber interruption, is how a Promise body learns it was cancelled.
 *
 * @internal
 */
export const adopt = <A>(thenable: PromiseLike<A>, then?: Then): Effect.Effect<A, unknown> =>
  Effect.uninterruptible(settlement(thenable, then))

/** @internal */
export const awaitSettled = <A>(promise: PromiseLike<A>): Effect.Effect<A, unknown> => adopt(promise)

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

type Restore = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>

/**
 * What a body returned, adopted: an Effect runs under `restore` (interruptibly, its own
 * cancellation), a thenable is adopted at once and awaited until it settles, anything else is
 * the value. Total: an inspection that throws is a defect.
 *
 * @internal
 */
export const adoptReturned = (out: unknown, restore: Restore): Effect.Effect<unknown, unknown, unknown> => {
  try {
    if (Effect.isEffect(out)) return restore(out as Effect.Effect<unknown, unknown, unknown>)
    const then = thenOf(out)
    return then === undefined ? Effect.succeed(out) : adopt(out as PromiseLike<unknown>, then)
  } catch (thrown) {
    return Effect.die(sanitizeThrown(thrown))
  }
}

/**
 * Calls a body (`run`) uninterruptibly and adopts what it returns ({@link adoptReturned})
 * before interruption can reach the fiber. A synchronous throw is a defect (BODY-5).
 *
 * @internal
 */
export const invokeUser = (run: () => unknown): Effect.Effect<unknown, unknown, unknown> =>
  Effect.uninterruptibleMask((restore) => suspendUser(() => adoptReturned(run(), restore) as never))
