/**
 * The in-memory {@link ToolRegistry} (spec §6): a global layer plus one layer per agent, agent
 * scope chains, live restrictions, guards, scope-filtered hooks, per-agent presentation modes,
 * and immutable views cached until the next change.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as CodeMode from "../src/CodeMode.js"
import type { JsonSchemaError } from "../src/JsonSchema.js"
import type * as Tool from "../src/Tool.js"
import { type ToolRegistrationError, ToolRegistry } from "../src/ToolRegistry.js"
import type { PresentationMode, Service } from "../src/ToolRegistry.js"
import * as checks from "./internal/registry/checks.js"
import * as internal from "./internal/registry/service.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface MakeOptions {
  /** The deployment presentation mode (TYPES-11); default `native`. */
  readonly mode?: PresentationMode | undefined
  /**
   * The Code Mode transport (`run_code`, MODE-5). It lives outside every layer and is appended
   * last to every view whose effective mode is not `native`. Without it, no view holds
   * `run_code`.
   */
  readonly transport?: Tool.Any | undefined
}

/**
 * Builds an empty registry.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: (options?: MakeOptions) => Effect.Effect<Service> = internal.make

/**
 * An empty registry with deployment mode `native` and no Code Mode transport.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<ToolRegistry> = Layer.effect(ToolRegistry, make())

/**
 * An empty registry with the given deployment mode and transport.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerWith = (options: MakeOptions): Layer.Layer<ToolRegistry> => Layer.effect(ToolRegistry, make(options))

/**
 * @since 0.1.0
 * @category models
 */
export interface CodeModeOptions extends CodeMode.TransportOptions {
  /** The deployment presentation mode; default `code`. Agents may present otherwise (`presentAs`). */
  readonly mode?: PresentationMode | undefined
}

/**
 * An empty registry holding Code Mode's `run_code` transport (`CodeMode.makeTransport`), with
 * deployment mode `code` unless `mode` says otherwise. Every view whose mode is not `native` gets
 * `run_code`; the program runs in the `CodeRuntime` mounted where `run_code` is called.
 *
 * An invalid option is a defect when the layer is built: a `CodeModeError`
 * (`maxParallelSubCalls must be a positive integer`), or an `IllegalArgumentException` for a
 * `mode` that is not `native`, `code` or `both`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerCodeMode = (options?: CodeModeOptions): Layer.Layer<ToolRegistry> =>
  Layer.effect(
    ToolRegistry,
    Effect.suspend(() => {
      let mode: unknown, maxParallelSubCalls: unknown
      try {
        mode = options?.mode
        maxParallelSubCalls = options?.maxParallelSubCalls
      } catch (error) {
        return Effect.die(
          new Cause.IllegalArgumentException(
            `InMemoryToolRegistry.layerCodeMode could not read its options: ${checks.describeError(error)}`
          )
        )
      }
      if (mode !== undefined && !checks.isPresentationMode(mode)) {
        return Effect.die(
          new Cause.IllegalArgumentException(
            "InMemoryToolRegistry.layerCodeMode option \"mode\" must be \"native\", \"code\" or \"both\""
          )
        )
      }
      const transport = CodeMode.makeTransport({ maxParallelSubCalls: maxParallelSubCalls as number | undefined })
      return make({ mode: mode ?? "code", transport })
    })
  )

/**
 * A registry with `tools` registered globally for the lifetime of the layer (a tool pack).
 * Fails like `register` when a definition is refused.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerPreloaded = (
  tools: ReadonlyArray<Tool.ToolDefinition<never>>,
  options?: MakeOptions
): Layer.Layer<ToolRegistry, ToolRegistrationError | JsonSchemaError> =>
  Layer.scoped(
    ToolRegistry,
    Effect.flatMap(make(options), (registry) =>
      Effect.as(Effect.forEach(tools, (tool) => registry.register(tool), { discard: true }), registry))
  )
