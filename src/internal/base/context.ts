/**
 * Running user code with the services captured when it was registered, merged over the
 * caller's. Merges are cached per (caller context, captured context) pair, so a call pays a
 * lookup, not a map copy.
 *
 * @internal
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"

const merges = new WeakMap<Context.Context<never>, WeakMap<Context.Context<never>, Context.Context<never>>>()

const covers = (outer: Context.Context<never>, captured: Context.Context<never>): boolean => {
  for (const [key, value] of captured.unsafeMap) {
    if (outer.unsafeMap.get(key) !== value) return false
  }
  return true
}

/** @internal */
export const mergeCached = (
  outer: Context.Context<never>,
  captured: Context.Context<never>
): Context.Context<never> => {
  let byCaptured = merges.get(outer)
  if (byCaptured === undefined) {
    byCaptured = new WeakMap()
    merges.set(outer, byCaptured)
  }
  let merged = byCaptured.get(captured)
  if (merged === undefined) {
    merged = covers(outer, captured) ? outer : Context.merge(outer, captured)
    byCaptured.set(captured, merged)
  }
  return merged
}

/**
 * Runs `run(restore)` with `captured` merged over the caller's context (captured services
 * win). `restore` hands an Effect back to the caller's context (for a `next` the user code
 * delegates to); when the captured services add nothing, nothing is switched.
 *
 * `run` is user code: it is called right away, inside the caller's own guard, so a throw (of
 * any value) reaches that guard and a value that is not an Effect is returned as it is for the
 * guard's own check — never evaluated inside Effect's run loop, where a hostile thrown value
 * would escape the fiber.
 *
 * @internal
 */
const identity = <B, F>(effect: Effect.Effect<B, F>): Effect.Effect<B, F> => effect

export const withCaptured = <A, E>(
  captured: Context.Context<never>,
  run: (restore: <B, F>(effect: Effect.Effect<B, F>) => Effect.Effect<B, F>) => Effect.Effect<A, E, unknown>
): Effect.Effect<A, E> => {
  if (captured.unsafeMap.size === 0) return run(identity) as Effect.Effect<A, E>
  let outer: Context.Context<never> | undefined = undefined
  const restore = <B, F>(effect: Effect.Effect<B, F>): Effect.Effect<B, F> =>
    Effect.suspend(() => outer === undefined ? effect : replaceContext(effect, outer))
  const out = run(restore)
  if (!Effect.isEffect(out)) return out as never
  return Effect.contextWithEffect((caller: Context.Context<never>) => {
    const merged = mergeCached(caller, captured)
    if (merged === caller) return out as Effect.Effect<A, E>
    outer = caller
    return replaceContext(out, merged)
  })
}


/**
 * Runs `effect` with exactly `context` (no merge).
 *
 * @internal
 */
export const replaceContext = <A, E>(
  effect: Effect.Effect<A, E, unknown>,
  context: Context.Context<never>
): Effect.Effect<A, E> =>
  Effect.mapInputContext(effect as Effect.Effect<A, E, never>, () => context)
