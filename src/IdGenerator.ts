/**
 * Ids for deferred context messages. Swappable so tests get deterministic ids.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"

/**
 * @since 0.1.0
 * @category models
 */
export interface Service {
  readonly next: () => string
}

/**
 * @since 0.1.0
 * @category tags
 */
export class IdGenerator extends Context.Tag("effect-tool-runtime/IdGenerator")<IdGenerator, Service>() {}

/**
 * Random UUIDs (the default when no generator is provided).
 *
 * @since 0.1.0
 * @category constructors
 */
export const random: Service = { next: () => globalThis.crypto.randomUUID() }

/**
 * `<prefix>1`, `<prefix>2`, … — deterministic, for tests.
 *
 * @since 0.1.0
 * @category constructors
 */
export const counter = (prefix = "ctx-"): Service => {
  let n = 0
  return { next: () => `${prefix}${++n}` }
}

/**
 * @since 0.1.0
 * @category layers
 */
export const layerRandom: Layer.Layer<IdGenerator> = Layer.succeed(IdGenerator, random)

/**
 * @since 0.1.0
 * @category layers
 */
export const layerCounter = (prefix?: string): Layer.Layer<IdGenerator> =>
  Layer.sync(IdGenerator, () => counter(prefix))
