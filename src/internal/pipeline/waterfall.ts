/**
 * Hook waterfalls (HOST-1, D-8): `next` re-runs the whole chain below each time it is run.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import { suspendUser } from "../base/promise.js"

const notAnEffect = (stage: string) => new TypeError(`${stage} hook must return an Effect`)

/** @internal */
export const callHook = <A>(stage: string, run: () => unknown): Effect.Effect<A, unknown> =>
  suspendUser(() => {
    const out = run()
    return Effect.isEffect(out) ? out as Effect.Effect<A, unknown> : Effect.die(notAnEffect(stage))
  })

/** @internal */
export const waterfall = <A, H>(
  stage: string,
  hooks: ReadonlyArray<H>,
  innermost: Effect.Effect<A>,
  invoke: (hook: H, next: Effect.Effect<A>) => unknown
): Effect.Effect<A, unknown> => {
  let next: Effect.Effect<A, unknown> = innermost
  for (let i = hooks.length - 1; i >= 0; i--) {
    const hook = hooks[i]!
    const below = i === hooks.length - 1 ? next as Effect.Effect<A> : Effect.orDie(next)
    next = callHook<A>(stage, () => invoke(hook, below))
  }
  return next
}
