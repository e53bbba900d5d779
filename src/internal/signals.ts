/**
 * AbortSignal plumbing: waiting for an abort, and flat signal fusion (BODY-2).
 *
 * @internal
 */
import * as Effect from "effect/Effect"

/**
 * Completes when `signal` aborts; removes its listener when interrupted.
 *
 * @internal
 */
export const awaitAbort = (signal: AbortSignal): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    if (signal.aborted) {
      resume(Effect.void)
      return
    }
    const onAbort = () => resume(Effect.void)
    signal.addEventListener("abort", onAbort, { once: true })
    return Effect.sync(() => signal.removeEventListener("abort", onAbort))
  })

/**
 * A fused signal and the function that detaches it from its sources.
 *
 * @internal
 */
export interface Fused {
  readonly signal: AbortSignal
  readonly detach: () => void
}

const noop = () => {}

/**
 * BODY-2: the caller signal itself when the wrapper kept it; otherwise a new signal aborting
 * with the reason of whichever source aborts first (an already-aborted wrapper signal wins,
 * then an already-aborted caller signal). Listeners are removed after the first abort or on
 * `detach`, whichever is first.
 *
 * @internal
 */
export const fuse = (caller: AbortSignal, wrapper: AbortSignal): Fused => {
  if (wrapper === caller) return { signal: caller, detach: noop }
  const controller = new AbortController()
  if (wrapper.aborted) {
    controller.abort(wrapper.reason)
    return { signal: controller.signal, detach: noop }
  }
  if (caller.aborted) {
    controller.abort(caller.reason)
    return { signal: controller.signal, detach: noop }
  }
  const detach = () => {
    caller.removeEventListener("abort", onCaller)
    wrapper.removeEventListener("abort", onWrapper)
  }
  const onCaller = () => {
    detach()
    controller.abort(caller.reason)
  }
  const onWrapper = () => {
    detach()
    controller.abort(wrapper.reason)
  }
  caller.addEventListener("abort", onCaller, { once: true })
  wrapper.addEventListener("abort", onWrapper, { once: true })
  return { signal: controller.signal, detach }
}
