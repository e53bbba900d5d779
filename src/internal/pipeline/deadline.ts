/**
 * Deadlines the runtime runs itself: an around-dispatch wrapper that only arms a deadline (the
 * timeout policy) declares a plan, and a call whose only wrapper is such a one gets the same
 * observable behaviour without running the wrapper: no `AbortController` until the body reads
 * its signal, a host timer on the live clock, no fiber.
 *
 * @internal
 */
import type * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as DefaultServices from "effect/DefaultServices"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import type { AgentId } from "../../Execution.js"
import type { AroundHook } from "../../Policy.js"
import type { ToolResult } from "../../ToolResult.js"
import { AbortWaiters, type BodyCancellation, type Caller } from "../base/signals.js"

/**
 * What a deadline-only wrapper would do for a call: no deadline (`undefined`, the wrapper passes
 * `next` through), a budget in milliseconds, or the failure the wrapper would fail with. Total.
 *
 * @internal
 */
export interface DeadlinePlan {
  readonly budget: (
    agent: AgentId | undefined,
    name: string
  ) => number | undefined | { readonly failure: Cause.Cause<unknown> }
  /** The abort reason the wrapper would give the body when the deadline fires. */
  readonly reason: (timeoutMs: number) => unknown
  /** The result the wrapper would answer when its deadline fired first. */
  readonly timedOut: (timeoutMs: number) => ToolResult
}

const plans = new WeakMap<object, DeadlinePlan>()

/**
 * Declares `wrapper` a deadline-only wrapper behaving as `plan` says.
 *
 * @internal
 */
export const declareDeadline = <E>(wrapper: AroundHook<E>, plan: DeadlinePlan): AroundHook<E> => {
  plans.set(wrapper, plan)
  return wrapper
}

/** @internal */
export const deadlinePlanOf = (wrapper: unknown): DeadlinePlan | undefined =>
  typeof wrapper === "function" ? plans.get(wrapper) : undefined

/**
 * The live clock: a host timer stands in for a sleep on it.
 *
 * @internal
 */
export const liveClock: Clock.Clock = Context.get(DefaultServices.liveServices, Clock.Clock)

/**
 * Arms a timer calling `fire` after `timeoutMs`: a host timer when the clock is the live one,
 * else a sleep on that `Clock` (so `TestClock` drives it). Returns its canceller.
 *
 * @internal
 */
export const armTimer = (clock: Clock.Clock, timeoutMs: number, fire: () => void): Effect.Effect<Effect.Effect<void>> => {
  if (clock === liveClock) {
    const handle = setTimeout(fire, timeoutMs)
    return Effect.succeed(Effect.sync(() => clearTimeout(handle)))
  }
  return Effect.map(
    Effect.fork(Effect.interruptible(Effect.zipRight(clock.sleep(Duration.millis(timeoutMs)), Effect.sync(fire)))),
    (timer) => Fiber.interrupt(timer)
  )
}

/**
 * A body's cancellation under a deadline: aborted by the caller or by the deadline, whichever
 * comes first, with that one's reason. Its `AbortSignal` is made only when the body reads it.
 *
 * @internal
 */
export class DeadlineCancellation implements BodyCancellation {
  private controller: AbortController | undefined = undefined
  private readonly waiters = new AbortWaiters()
  private removeCaller: (() => void) | undefined = undefined
  private done = false
  /** The deadline's own reason once it fired first; `undefined` otherwise. */
  firedFirst: unknown = undefined
  private reason: unknown = undefined

  constructor(private readonly caller: Caller) {
    if (caller.aborted) this.settle(caller.abortReason)
  }

  aborted(): boolean {
    return this.done
  }

  signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController()
      if (this.done) this.controller.abort(this.reason)
      else this.listen()
    }
    return this.controller.signal
  }

  onAbort(waiter: () => void): () => void {
    const remove = this.waiters.add(waiter)
    this.listen()
    return remove
  }

  /** The deadline fired: abort with `reason` unless the caller aborted first. */
  fire(reason: unknown): void {
    if (this.done) return
    this.firedFirst = reason
    this.settle(reason)
  }

  detach(): void {
    this.removeCaller?.()
    this.removeCaller = undefined
  }

  private listen(): void {
    if (this.done || this.removeCaller !== undefined) return
    this.removeCaller = this.caller.onAbort(() => this.settle(this.caller.abortReason))
  }

  private settle(reason: unknown): void {
    if (this.done) return
    this.done = true
    this.reason = reason
    this.detach()
    this.controller?.abort(reason)
    this.waiters.fire()
  }
}
