/**
 * Caller cancellation (D-14) and flat signal fusion for bodies (BODY-2).
 *
 * @internal
 */
import * as Effect from "effect/Effect"

const noop = () => {}

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
