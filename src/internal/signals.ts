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

/**
 * The execution's caller cancellation (D-14): aborted by the input signal or by the calling
 * fiber's interruption. Its `AbortSignal` is created only when someone reads it, and the input
 * signal is listened to only while something waits for the abort; `detach` removes the
 * listener.
 *
 * @internal
 */
export class Caller {
  private controller: AbortController | undefined = undefined
  private flagged = false
  private reason: unknown = undefined
  private waiters: Array<() => void> | undefined = undefined
  private linked = false
  private readonly onInput = () => this.abort(this.input?.reason)
  constructor(private readonly input: AbortSignal | undefined) {}

  get aborted(): boolean {
    return this.flagged || (this.input !== undefined && this.input.aborted)
  }

  get signal(): AbortSignal {
    if (this.controller === undefined) {
      const controller = new AbortController()
      this.controller = controller
      if (this.aborted) controller.abort(this.flagged ? this.reason : this.input?.reason)
      else this.link()
    }
    return this.controller.signal
  }

  /** Whether the signal was already handed out (so identity matters for fusion). */
  isSignal(signal: AbortSignal): boolean {
    return this.controller !== undefined && this.controller.signal === signal
  }

  abort(reason: unknown): void {
    if (this.flagged) return
    this.flagged = true
    this.reason = reason
    this.controller?.abort(reason)
    const waiters = this.waiters
    this.waiters = undefined
    if (waiters !== undefined) for (const waiter of waiters) waiter()
  }

  /** Runs `waiter` once when aborted (the caller checks `aborted` first); returns a remover. */
  onAbort(waiter: () => void): () => void {
    const waiters = this.waiters ?? (this.waiters = [])
    waiters.push(waiter)
    this.link()
    return () => {
      const index = this.waiters?.indexOf(waiter) ?? -1
      if (index >= 0) this.waiters!.splice(index, 1)
    }
  }

  detach(): void {
    if (this.linked) {
      this.linked = false
      this.input?.removeEventListener("abort", this.onInput)
    }
  }

  private link(): void {
    if (this.linked || this.input === undefined || this.flagged) return
    this.linked = true
    this.input.addEventListener("abort", this.onInput, { once: true })
  }
}

/**
 * Where a body learns about its cancellation: the caller itself (no wrapper replaced the
 * signal, so no signal needs creating) or a fused signal.
 *
 * @internal
 */
export interface BodyCancellation {
  readonly aborted: () => boolean
  readonly signal: () => AbortSignal
  readonly onAbort: (waiter: () => void) => () => void
  readonly detach: () => void
}

/**
 * BODY-2 over a {@link Caller}: when the wrapper kept the caller's signal the body shares the
 * caller's cancellation; otherwise a fused signal aborting with whichever source aborts first
 * (an already-aborted wrapper signal wins, then an already-aborted caller).
 *
 * @internal
 */
export const fuseCaller = (caller: Caller, wrapper: AbortSignal | undefined): BodyCancellation => {
  if (wrapper === undefined || caller.isSignal(wrapper)) {
    return {
      aborted: () => caller.aborted,
      signal: () => caller.signal,
      onAbort: (waiter) => caller.onAbort(waiter),
      detach: noop
    }
  }
  const controller = new AbortController()
  const fused = controller.signal
  let removeCaller = noop
  const onWrapper = () => {
    detach()
    controller.abort(wrapper.reason)
  }
  const detach = () => {
    removeCaller()
    wrapper.removeEventListener("abort", onWrapper)
  }
  if (wrapper.aborted) controller.abort(wrapper.reason)
  else if (caller.aborted) controller.abort(caller.signal.reason)
  else {
    removeCaller = caller.onAbort(() => {
      detach()
      controller.abort(caller.signal.reason)
    })
    wrapper.addEventListener("abort", onWrapper, { once: true })
  }
  return {
    aborted: () => fused.aborted,
    signal: () => fused,
    onAbort: (waiter) => {
      fused.addEventListener("abort", waiter, { once: true })
      return () => fused.removeEventListener("abort", waiter)
    },
    detach
  }
}

/**
 * Completes when the caller is aborted; removes its waiter when interrupted.
 *
 * @internal
 */
export const awaitCaller = (caller: Caller): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    if (caller.aborted) {
      resume(Effect.void)
      return
    }
    const remove = caller.onAbort(() => resume(Effect.void))
    return Effect.sync(remove)
  })
