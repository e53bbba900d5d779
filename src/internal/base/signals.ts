/**
 * Caller cancellation (D-14, D-20) and flat signal fusion for bodies (BODY-2).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import { types } from "node:util"

const noop = () => {}

const abortedGetter = Object.getOwnPropertyDescriptor(AbortSignal.prototype, "aborted")!.get!

/**
 * True only for a genuine `AbortSignal` of this realm: not a Proxy, an instance whose prototype
 * is `AbortSignal.prototype` itself (not an object inheriting from a signal), and one that
 * passes the `aborted` getter's brand check. Total.
 *
 * @internal
 */
export const isAbortSignal = (u: unknown): u is AbortSignal => {
  if (typeof u !== "object" || u === null || types.isProxy(u)) return false
  try {
    if (Object.getPrototypeOf(u) !== AbortSignal.prototype) return false
    abortedGetter.call(u)
    return true
  } catch {
    return false
  }
}

/**
 * One `abort` listener per caller signal, however many calls share it (D-20: every listener
 * is removed when its call finishes). Members are notified in the order they joined.
 */
class SharedLink {
  readonly members = new Set<Caller>()
  constructor(readonly signal: AbortSignal) {}
  readonly onAbort = () => {
    links.delete(this.signal)
    this.signal.removeEventListener("abort", this.onAbort)
    const members = [...this.members]
    this.members.clear()
    const reason = this.signal.reason
    for (const member of members) member.abort(reason)
  }
}

const links = new WeakMap<AbortSignal, SharedLink>()

const join = (signal: AbortSignal, caller: Caller): void => {
  let link = links.get(signal)
  if (link === undefined) {
    link = new SharedLink(signal)
    links.set(signal, link)
    signal.addEventListener("abort", link.onAbort, { once: true })
  }
  link.members.add(caller)
}

const leave = (signal: AbortSignal, caller: Caller): void => {
  const link = links.get(signal)
  if (link === undefined || !link.members.delete(caller) || link.members.size > 0) return
  links.delete(signal)
  signal.removeEventListener("abort", link.onAbort)
}

/**
 * The number of listeners the runtime holds on `signal` (0 or 1). For tests.
 *
 * @internal
 */
export const sharedListeners = (signal: AbortSignal): number => (links.has(signal) ? 1 : 0)

/**
 * One-shot abort waiters: each runs once when `fire` is called, unless removed before.
 *
 * @internal
 */
export class AbortWaiters {
  private list: Array<() => void> | undefined = undefined

  /** Adds `waiter`; returns its remover. */
  add(waiter: () => void): () => void {
    const list = this.list ?? (this.list = [])
    list.push(waiter)
    return () => {
      const index = this.list?.indexOf(waiter) ?? -1
      if (index >= 0) this.list!.splice(index, 1)
    }
  }

  /** Runs every waiter once, in the order they were added. */
  fire(): void {
    const list = this.list
    this.list = undefined
    if (list !== undefined) for (const waiter of list) waiter()
  }
}

/**
 * The execution's caller cancellation (D-14): aborted by the input signal or by the calling
 * fiber's interruption. Its `AbortSignal` is created only when someone reads it, and the input
 * signal is listened to (through one shared listener per signal) only while something waits
 * for the abort and the call has not finished; `detach` ends that for good.
 *
 * @internal
 */
export class Caller {
  private controller: AbortController | undefined = undefined
  private flagged = false
  private reason: unknown = undefined
  private readonly waiters = new AbortWaiters()
  private linked = false
  private detached = false
  constructor(private readonly input: AbortSignal | undefined) {}

  get aborted(): boolean {
    return this.flagged || (this.input !== undefined && this.input.aborted)
  }

  /** The abort's reason (`undefined` while not aborted), without making the signal. */
  get abortReason(): unknown {
    return this.flagged ? this.reason : this.input?.reason
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
    this.unlink()
    this.controller?.abort(reason)
    this.waiters.fire()
  }

  /** Runs `waiter` once when aborted (the caller checks `aborted` first); returns a remover. */
  onAbort(waiter: () => void): () => void {
    const remove = this.waiters.add(waiter)
    this.link()
    return remove
  }

  /** The call finished: stop listening to the input signal, and never listen again. */
  detach(): void {
    this.detached = true
    this.unlink()
  }

  private link(): void {
    if (this.linked || this.detached || this.flagged || this.input === undefined || this.input.aborted) return
    this.linked = true
    join(this.input, this)
  }

  private unlink(): void {
    if (!this.linked) return
    this.linked = false
    leave(this.input!, this)
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

/** Signals that abort whenever the signal they were derived from aborts, with its reason. */
const followers = new WeakMap<AbortSignal, AbortSignal>()

/**
 * Declares that `derived` aborts whenever `source` does, with its reason (a deadline that follows
 * the signal it replaced): a body given `derived` needs no fusion with `source`.
 *
 * @internal
 */
export const followSignal = (derived: AbortSignal, source: AbortSignal): void => {
  followers.set(derived, source)
}

/** A body's cancellation that is a signal alone (it already follows the caller's). */
class SignalCancellation implements BodyCancellation {
  constructor(readonly fused: AbortSignal) {}
  aborted(): boolean {
    return this.fused.aborted
  }
  signal(): AbortSignal {
    return this.fused
  }
  onAbort(waiter: () => void): () => void {
    const fused = this.fused
    fused.addEventListener("abort", waiter, { once: true })
    return () => fused.removeEventListener("abort", waiter)
  }
  detach(): void {}
}

/** The caller's own cancellation, as a body's (no wrapper replaced its signal). */
class CallerCancellation implements BodyCancellation {
  constructor(readonly caller: Caller) {}
  aborted(): boolean {
    return this.caller.aborted
  }
  signal(): AbortSignal {
    return this.caller.signal
  }
  onAbort(waiter: () => void): () => void {
    return this.caller.onAbort(waiter)
  }
  detach(): void {}
}

/**
 * The caller's own cancellation as a body's.
 *
 * @internal
 */
export const callerCancellation = (caller: Caller): BodyCancellation => new CallerCancellation(caller)

/**
 * BODY-2 over a {@link Caller}: when the wrapper kept the caller's signal the body shares the
 * caller's cancellation; otherwise a fused signal aborting with whichever source aborts first
 * (an already-aborted wrapper signal wins, then an already-aborted caller).
 *
 * @internal
 */
export const fuseCaller = (caller: Caller, wrapper: AbortSignal | undefined): BodyCancellation => {
  if (wrapper === undefined || caller.isSignal(wrapper)) return new CallerCancellation(caller)
  const source = followers.get(wrapper)
  if (source !== undefined && caller.isSignal(source)) return new SignalCancellation(wrapper)
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
